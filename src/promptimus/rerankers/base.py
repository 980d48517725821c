"""Where the reranker seam was first; it lives in `promptimus.protocols.reranker`."""

from __future__ import annotations

from promptimus.protocols.reranker import FusionProtocol, RerankerProtocol

__all__ = ["FusionProtocol", "RerankerProtocol"]
