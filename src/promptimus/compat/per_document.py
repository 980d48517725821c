"""The original promptimus' store interface: one document per call, ids chosen by the store.

Promptimus 0.1 called these ``VectorStoreProtocol`` and ``TextStoreProtocol`` (in the misspelled
``promptimus.vectore_store``). Our `VectorStoreProtocol` is a different, batch interface (insert
with caller-chosen ids, metadata filters), so the 0.1 method sets keep their own protocols here
under names that say what they are. A store may satisfy both: ``native_storage.MemoryStore`` does.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Protocol, runtime_checkable

from promptimus.dto import SearchHit

__all__ = ["PerDocumentTextStoreProtocol", "PerDocumentVectorStoreProtocol"]


@runtime_checkable
class PerDocumentVectorStoreProtocol(Protocol):
    """Stores one document with its embedding per call and returns the id it chose for it.

    ``vector_search`` returns at most ``n_results`` hits, best first (higher score is better).
    """

    async def vector_insert(self, embedding: list[float], content: str) -> Hashable: ...

    async def vector_search(self, embedding: list[float], n_results: int) -> list[SearchHit]: ...

    async def delete(self, idx: Any) -> None: ...


@runtime_checkable
class PerDocumentTextStoreProtocol(Protocol):
    """Stores one document per call for lexical search and returns the id it chose for it."""

    async def text_insert(self, content: str) -> Hashable: ...

    async def text_search(self, query: str, n_results: int) -> list[SearchHit]: ...

    async def delete(self, idx: Any) -> None: ...
