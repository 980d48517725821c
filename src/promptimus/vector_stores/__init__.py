"""Vector stores behind ``VectorStoreProtocol``; scores are "higher is better" everywhere.

``InMemoryVectorStore`` (numpy, imported on first use) serves small corpora; the Chroma store lives
in the ``promptimus-chromadb-store`` plugin (``from chromadb_store import ChromaVectorStore``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'promptimus.vector_stores' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"promptimus.vector_stores.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return [*globals(), *__all__]
