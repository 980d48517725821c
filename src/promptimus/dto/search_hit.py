"""`SearchHit`: one result of a vector store search or a rerank, and its `Metadata`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Metadata", "SearchHit"]

Metadata = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result. ``score``: higher is better (cosine space: cosine similarity)."""

    id: str
    document: str
    score: float
    metadata: Metadata = field(default_factory=dict)

    # The original promptimus (0.1) named these ``idx`` and ``content``; code that reads results
    # with those names keeps working on every store's hits.
    @property
    def idx(self) -> str:
        """The document's id (the original promptimus' name for `id`)."""
        return self.id

    @property
    def content(self) -> str:
        """The document's text (the original promptimus' name for `document`)."""
        return self.document
