"""`LLMReranker` runs a prompt, so it is a module: it lives in `promptimus.modules.llm_reranker`.
This path serves its names on first use, so the providers import nothing from the modules."""

from __future__ import annotations

from promptimus._lazy import lazy_exports

_MOVED = "promptimus.modules.llm_reranker"
_NAMES = ("DEFAULT_INSTRUCTIONS", "DEFAULT_REQUEST", "LLMReranker", "parse_scores")

__all__ = ["LLMReranker", "parse_scores"]  # noqa: F822 (served by __getattr__)
__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(_NAMES, _MOVED), globals())
