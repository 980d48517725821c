"""``Claude``: promptimus 0.1's Anthropic provider, as `OpenAILike` on Anthropic's
OpenAI-compatible endpoint (no second client: the same transport, retries and limits).

Anthropic documents that endpoint as meant for evaluation and lists its limits (e.g. tool
schemas are not enforced strictly); `StructuralOutput` still validates every reply and sends
the errors back. For the full Claude API (PDFs, citations, prompt caching) use Anthropic's SDK.
"""

from __future__ import annotations

from typing import Any

from promptimus.argument_checks import positive_int
from promptimus.llms.openai import OpenAILike
from promptimus.transport.retry import RetryPolicy

__all__ = ["ANTHROPIC_OPENAI_BASE_URL", "Claude"]

ANTHROPIC_OPENAI_BASE_URL = "https://api.anthropic.com/v1/"


class Claude(OpenAILike):
    """Chat with a Claude model; the key comes from ``api_key=`` or ``ANTHROPIC_API_KEY``.

    The arguments are 0.1's, in its order: ``n_retries`` counts attempts (``max_retries`` is
    one less), ``base_wait`` is the first backoff in seconds, ``max_tokens`` is sent with every
    request (Anthropic requires it) unless ``call_kwargs`` sets it.
    """

    def __init__(
        self,
        model_name: str,
        call_kwargs: dict[str, Any] | None = None,
        max_tokens: int = 16000,
        max_concurrency: int | None = 10,
        n_retries: int = 5,
        base_wait: float = 3.0,
        **kwargs: Any,
    ) -> None:
        n_retries = positive_int(n_retries, "Claude: n_retries")
        kwargs.setdefault("base_url", ANTHROPIC_OPENAI_BASE_URL)
        kwargs.setdefault("api_key_env", "ANTHROPIC_API_KEY")
        kwargs.setdefault("retry", RetryPolicy(max_retries=n_retries - 1, base_delay=base_wait))
        super().__init__(
            model_name,
            call_kwargs={"max_tokens": max_tokens, **(call_kwargs or {})},
            max_concurrency=max_concurrency,
            **kwargs,
        )
