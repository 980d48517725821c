"""Vector stores behind ``VectorStoreProtocol``; scores are "higher is better" everywhere.

``InMemoryVectorStore`` (numpy, imported on first use) serves small corpora; the Chroma store lives
in the ``promptimus-chromadb-store`` plugin (``from chromadb_store import ChromaVectorStore``).
The original promptimus' result type and per-document store interface are here too
(`BaseSearchResult`, `PerDocumentVectorStoreProtocol`, `PerDocumentTextStoreProtocol`); its
``MemoryStore`` is in the ``promptimus-native-storage`` plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports
from promptimus.vector_stores.base import (
    Metadata,
    SearchHit,
    VectorStoreProtocol,
    Where,
    compile_where,
    validate_where,
)
from promptimus.vector_stores.per_document import (
    PerDocumentTextStoreProtocol,
    PerDocumentVectorStoreProtocol,
)
from promptimus.vector_stores.search_result import BaseSearchResult

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
