"""Vector stores behind ``VectorStoreProtocol``; scores are "higher is better" everywhere.

``InMemoryVectorStore`` (numpy, imported on first use) serves small corpora; the Chroma store lives
in the ``promptimus-chromadb-store`` plugin (``from chromadb_store import ChromaVectorStore``).
promptimus 0.1's result type and per-document store protocols are served here too
(`BaseSearchResult`, `PerDocumentVectorStoreProtocol`, `PerDocumentTextStoreProtocol`, from
`promptimus.compat`); its ``MemoryStore`` is in the ``promptimus-native-storage`` plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._compat_seam import compat_names
from promptimus._lazy import lazy_exports
from promptimus.vector_stores.base import (
    Metadata,
    SearchHit,
    VectorStoreProtocol,
    Where,
    compile_where,
    validate_where,
)

if TYPE_CHECKING:
    from promptimus.vector_stores.memory import InMemoryVectorStore

_EXPORTS = {"InMemoryVectorStore": "memory"}

__all__ = [
    "BaseSearchResult",
    "InMemoryVectorStore",
    "Metadata",
    "PerDocumentTextStoreProtocol",
    "PerDocumentVectorStoreProtocol",
    "SearchHit",
    "VectorStoreProtocol",
    "Where",
    "compile_where",
    "validate_where",
]


_lazy_getattr, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
__getattr__ = compat_names(__name__, _lazy_getattr)
