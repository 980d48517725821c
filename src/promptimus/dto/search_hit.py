"""`SearchHit`: one result of a vector store search or a rerank, and its `Metadata`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .._compat_seam import CompatProperty

__all__ = ["Metadata", "SearchHit"]

Metadata = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result. ``score``: higher is better (cosine space: cosine similarity)."""

    id: str
    document: str
    score: float
    metadata: Metadata = field(default_factory=dict)

    idx = CompatProperty("dto:search_hit_id")
    content = CompatProperty("dto:search_hit_document")
