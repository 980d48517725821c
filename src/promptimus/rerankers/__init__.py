"""Rerankers: reorder search hits for a query. Names load on first use (httpx stays unimported)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "RerankerProtocol": "promptimus.protocols",
    "FusionProtocol": "promptimus.protocols",
    "RRFReranker": "rrf",
    "reciprocal_rank_fusion": "rrf",
    "OpenAILikeReranker": "openai",
    "LLMReranker": "llm",
}

if TYPE_CHECKING:
    from promptimus.protocols import FusionProtocol as FusionProtocol
    from promptimus.protocols import RerankerProtocol as RerankerProtocol

    from .llm import LLMReranker as LLMReranker
    from .openai import OpenAILikeReranker as OpenAILikeReranker
    from .rrf import RRFReranker as RRFReranker
    from .rrf import reciprocal_rank_fusion as reciprocal_rank_fusion


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = list(_LAZY)
