"""Deprecated spelling of `promptimus.vector_stores`, kept so code written for promptimus 0.1
imports unchanged. Importing it (or ``promptimus.vectore_store.base``) warns once.

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
from types import CodeType

from promptimus.vector_stores.per_document import (
    PerDocumentTextStoreProtocol as TextStoreProtocol,
)
from promptimus.vector_stores.per_document import (
    PerDocumentVectorStoreProtocol as VectorStoreProtocol,
)
from promptimus.vector_stores.search_result import BaseSearchResult

__all__ = ["BaseSearchResult", "TextStoreProtocol", "VectorStoreProtocol"]


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


def _warn_at_importer() -> None:
    """Warn at the statement that imported this package, skipping every import machinery frame
    (``stacklevel`` cannot: loaders such as pytest's assertion rewriter add frames of their own)."""
    frame = sys._getframe(1).f_back  # the frame above this package's body
    while frame is not None and _is_import_machinery(frame.f_code):
        frame = frame.f_back
    if frame is None:
        warnings.warn(_MESSAGE, DeprecationWarning, stacklevel=2)
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


_warn_at_importer()
