"""``Claude``: promptimus 0.1's Anthropic provider, now on Anthropic's native Messages API.

0.1 reached Claude through Anthropic's OpenAI-compatible endpoint, which Anthropic documents as
meant for testing (it ignores ``response_format``, returns no thinking and takes no prompt
caching or PDFs). ``Claude`` keeps 0.1's arguments and is now `Anthropic` underneath, so it
keeps all of that; ``ANTHROPIC_OPENAI_BASE_URL`` still names the compatible endpoint for
anyone who wants it through `OpenAILike`.
"""

from __future__ import annotations

from typing import Any

from promptimus.argument_checks import positive_int
from promptimus.llms.anthropic import Anthropic
from promptimus.transport.retry import RetryPolicy

__all__ = ["ANTHROPIC_OPENAI_BASE_URL", "Claude"]

ANTHROPIC_OPENAI_BASE_URL = "https://api.anthropic.com/v1/"
"""Anthropic's OpenAI-compatible endpoint (for `OpenAILike`; `Claude` no longer uses it)."""


def _api_root(base_url: str | None) -> str | None:
    """The API root for a base URL given as 0.1 took it (ending in ``/v1``): the SDK adds
    ``/v1/messages`` itself."""
    if base_url is None:
        return None
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


class Claude(Anthropic):
    """Chat with a Claude model; the key comes from ``api_key=`` or ``ANTHROPIC_API_KEY``.

    The arguments are 0.1's, in its order: ``n_retries`` counts attempts (``max_retries`` is
    one less), ``base_wait`` is the first backoff in seconds, ``max_tokens`` is sent with every
    request unless ``call_kwargs`` sets it. Other keyword arguments are `Anthropic`'s
    (``thinking=``, ``cache=``...); a ``base_url`` ending in ``/v1`` (0.1's form) is read as
    the API root before it.
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
        kwargs.setdefault("retry", RetryPolicy(max_retries=n_retries - 1, base_delay=base_wait))
        kwargs["base_url"] = _api_root(kwargs.get("base_url"))
        super().__init__(
            model_name,
            call_kwargs=call_kwargs,
            max_tokens=max_tokens,
            max_concurrency=max_concurrency,
            **kwargs,
        )
