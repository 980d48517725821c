"""Rerankers: reorder search hits for a query. Names load on first use (httpx stays unimported).

`LLMReranker` runs a prompt, so it is a module (`promptimus.modules.llm_reranker`); it is served
here too, on first use, because this is where users look for every reranker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "RerankerProtocol": "promptimus.protocols",
    "FusionProtocol": "promptimus.protocols",
    "RRFReranker": "rrf",
    "reciprocal_rank_fusion": "rrf",
    "OpenAILikeReranker": "openai",
    "LLMReranker": "promptimus.modules.llm_reranker",
}

if TYPE_CHECKING:
    from promptimus.protocols import FusionProtocol as FusionProtocol
    from promptimus.protocols import RerankerProtocol as RerankerProtocol

    from .openai import OpenAILikeReranker as OpenAILikeReranker
    from .rrf import RRFReranker as RRFReranker
    from .rrf import reciprocal_rank_fusion as reciprocal_rank_fusion


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = list(_LAZY)
