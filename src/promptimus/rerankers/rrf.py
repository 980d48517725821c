"""`RRFReranker`: reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from promptimus._compat_seam import compat_calls
from promptimus.argument_checks import finite_number, non_negative_int
from promptimus.core import Module, Parameter

if TYPE_CHECKING:
    from promptimus.dto import SearchHit

__all__ = ["RRFReranker", "reciprocal_rank_fusion"]


def reciprocal_rank_fusion(
    rankings: list[list[SearchHit]], k: float = 60, top_n: int | None = None
) -> list[SearchHit]:
    """Merge rankings by document id: ``score(d) = sum over rankings of 1 / (k + rank_d)``.

    Ranks start at 1. A document missing from a ranking contributes nothing for it; a document
    listed twice in one ranking counts once, at its best rank. Each fused hit is the first hit seen
    with that id (rankings in order), carrying the fused score. Ties go to the document with the
    better best rank, then to the one seen first — so the order is fully deterministic.
    """
    k = finite_number(k, "RRF's k (the usual value is 60)")
    if top_n is not None:
        top_n = non_negative_int(top_n, "top_n (or None)")
    first: dict[str, SearchHit] = {}
    parts: dict[str, list[float]] = {}
    best_rank: dict[str, int] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for rank, hit in enumerate(ranking, start=1):
            if hit.id in seen:
                continue
            seen.add(hit.id)
            if hit.id not in first:
                first[hit.id] = hit
                parts[hit.id] = []
                best_rank[hit.id] = rank
            elif rank < best_rank[hit.id]:
                best_rank[hit.id] = rank
            parts[hit.id].append(1.0 / (k + rank))
    # fsum is exactly rounded, so equal contributions in any order give equal scores
    scores = {doc_id: math.fsum(values) for doc_id, values in parts.items()}
    order = {doc_id: position for position, doc_id in enumerate(first)}
    ranked = sorted(first, key=lambda d: (-scores[d], best_rank[d], order[d]))
    if top_n is not None:
        ranked = ranked[:top_n]
    return [replace(first[d], score=scores[d]) for d in ranked]


class RRFReranker(Module):
    """Reciprocal rank fusion as a module: ``k`` is a Parameter (saved in checkpoints, tunable).

    Larger ``k`` flattens the difference between top and lower ranks; 60 is the paper's value.
    ``fuse`` merges several rankings (e.g. vector and BM25 results) by document id; ``rerank`` on a
    single list keeps its order and assigns RRF scores. It never looks at the query.
    """

    def __init__(self, k: int | float = 60) -> None:
        super().__init__()
        self.k = Parameter(k)

    def fuse(self, rankings: list[list[SearchHit]], top_n: int | None = None) -> list[SearchHit]:
        return reciprocal_rank_fusion(rankings, self.k.value, top_n)

    async def rerank(
        self, query: str, hits: list[SearchHit], top_n: int | None = None
    ) -> list[SearchHit]:
        return self.fuse([hits], top_n)

    @compat_calls("retrieval:rrf_forward_arguments")
    async def forward(
        self, rankings: list[list[SearchHit]], top_n: int | None = None
    ) -> list[SearchHit]:
        """The fused ranking of ``rankings`` (best first, at most ``top_n``)."""
        return self.fuse(rankings, top_n)
