"""``promptimus.vectore_store``, promptimus 0.1's misspelled `promptimus.vector_stores`, kept so
code written for 0.1 imports unchanged. Importing it (or ``promptimus.vectore_store.base``) warns
once, at the importing line (`warn_at_importer`, called by the package's body).

- ``BaseSearchResult`` is `promptimus.vector_stores.BaseSearchResult`, a `SearchHit` that is also
  built and read with the 0.1 names (``idx``, ``content``, ``score``).
- ``VectorStoreProtocol`` and ``TextStoreProtocol`` are the 0.1 method sets (``vector_insert`` /
  ``vector_search`` / ``delete`` and ``text_insert`` / ``text_search`` / ``delete``), now named
  `PerDocumentVectorStoreProtocol` and `PerDocumentTextStoreProtocol`. The current
  ``promptimus.vector_stores.VectorStoreProtocol`` is a different, batch interface.
"""

from __future__ import annotations

import sys
import warnings
from types import CodeType, FrameType

from .per_document import PerDocumentTextStoreProtocol as TextStoreProtocol
from .per_document import PerDocumentVectorStoreProtocol as VectorStoreProtocol
from .search_result import BaseSearchResult

__all__ = ["BaseSearchResult", "TextStoreProtocol", "VectorStoreProtocol", "warn_at_importer"]


_MESSAGE = (
    "promptimus.vectore_store is deprecated: import from promptimus.vector_stores instead "
    "(BaseSearchResult; VectorStoreProtocol is now PerDocumentVectorStoreProtocol and "
    "TextStoreProtocol is PerDocumentTextStoreProtocol)."
)


def _is_import_machinery(code: CodeType) -> bool:
    filename = code.co_filename.replace("\\", "/")
    return (
        filename.startswith("<frozen importlib")
        or "/importlib/" in filename
        or code.co_name in ("exec_module", "load_module")  # any loader, e.g. pytest's rewriter
    )


def warn_at_importer() -> None:
    """Warn at the statement that imported the package whose body calls this, skipping every
    import machinery frame (``stacklevel`` cannot: loaders such as pytest's assertion rewriter
    add frames of their own)."""
    frame: FrameType | None = sys._getframe(2)  # the frame above the package's body
    while frame is not None and _is_import_machinery(frame.f_code):
        frame = frame.f_back
    if frame is None:
        warnings.warn(_MESSAGE, DeprecationWarning, stacklevel=3)
        return
    module_globals = frame.f_globals
    warnings.warn_explicit(
        _MESSAGE,
        DeprecationWarning,
        frame.f_code.co_filename,
        frame.f_lineno,
        module=module_globals.get("__name__", "<unknown>"),
        registry=module_globals.setdefault("__warningregistry__", {}),
    )
