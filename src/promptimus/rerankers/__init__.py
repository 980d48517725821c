"""Rerankers: reorder search hits for a query. Names load on first use (httpx stays unimported)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY: dict[str, str] = {
    "RerankerProtocol": "base",
    "FusionProtocol": "base",
    "RRFReranker": "rrf",
    "reciprocal_rank_fusion": "rrf",
    "OpenAILikeReranker": "openai",
    "LLMReranker": "llm",
}

if TYPE_CHECKING:
    from .base import FusionProtocol as FusionProtocol
    from .base import RerankerProtocol as RerankerProtocol
    from .llm import LLMReranker as LLMReranker
    from .openai import OpenAILikeReranker as OpenAILikeReranker
    from .rrf import RRFReranker as RRFReranker
    from .rrf import reciprocal_rank_fusion as reciprocal_rank_fusion


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'promptimus.rerankers' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{target}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = list(_LAZY)
