"""The vector-store seam: anything that inserts, searches, deletes and counts documents is a
vector store. Scores are "higher is better"; the `where` filter syntax is described in
`promptimus.vector_stores.base`."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from promptimus.dto.search_hit import Metadata, SearchHit

__all__ = ["Metadata", "VectorStoreProtocol", "Where"]

Where = dict[str, Any]


@runtime_checkable
class VectorStoreProtocol(Protocol):
    """A store of documents with embeddings, ids and metadata.

    - ``insert`` upserts: inserting an id that exists replaces that document, never duplicates it;
      it returns the ids in input order.
    - ``search`` returns at most ``n_results`` hits, best first (higher score is better).
    - ``text_search`` does lexical search when ``supports_text_search`` is true, and raises
      `TextSearchUnsupported` otherwise.
    - ``where`` is the metadata filter described in `promptimus.vector_stores.base`; invalid
      filters raise `InvalidFilter`.
    """

    supports_text_search: bool

    async def insert(
        self,
        embeddings: list[list[float]],
        documents: list[str],
        ids: list[str],
        metadatas: list[Metadata] | None = None,
    ) -> list[str]: ...

    async def search(
        self, embedding: list[float], n_results: int = 10, where: Where | None = None
    ) -> list[SearchHit]: ...

    async def text_search(
        self, query: str, n_results: int = 10, where: Where | None = None
    ) -> list[SearchHit]: ...

    async def delete(self, ids: list[str]) -> None: ...

    async def count(self) -> int: ...
