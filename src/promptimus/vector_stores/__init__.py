"""Vector stores behind ``VectorStoreProtocol``; scores are "higher is better" everywhere.

``InMemoryVectorStore`` (numpy, imported on first use) serves small corpora; the Chroma store lives
in the ``promptimus-chromadb-store`` plugin (``from chromadb_store import ChromaVectorStore``).
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

if TYPE_CHECKING:
    from promptimus.vector_stores.memory import InMemoryVectorStore

_EXPORTS = {"InMemoryVectorStore": "memory"}

__all__ = [
    "InMemoryVectorStore",
    "Metadata",
    "SearchHit",
    "VectorStoreProtocol",
    "Where",
    "compile_where",
    "validate_where",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
