"""The reranker seam: anything that reorders search hits for a query.

Two kinds exist and a retrieval pipeline uses whichever it is given:

- a **reranker** (`RerankerProtocol`) rescores one list of candidates against the query — a
  cross-encoder API (`OpenAILikeReranker`) or an LLM (`LLMReranker`);
- a **fusion** reranker (`FusionProtocol`) also merges several rankings of the same corpus by
  document id without looking at the query — reciprocal rank fusion (`RRFReranker`).

Every reranker returns `SearchHit`s, best first, with ``score`` replaced by its own score (higher is
better); ``id``, ``document`` and ``metadata`` are the input hit's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from promptimus.dto.search_hit import SearchHit

__all__ = ["FusionProtocol", "RerankerProtocol"]


@runtime_checkable
class RerankerProtocol(Protocol):
    """Reorders ``hits`` by relevance to ``query``; returns at most ``top_n`` hits (all if None)."""

    async def rerank(
        self, query: str, hits: list[SearchHit], top_n: int | None = None
    ) -> list[SearchHit]: ...


@runtime_checkable
class FusionProtocol(RerankerProtocol, Protocol):
    """A reranker that can also merge several rankings into one, matching documents by id."""

    def fuse(
        self, rankings: list[list[SearchHit]], top_n: int | None = None
    ) -> list[SearchHit]: ...
