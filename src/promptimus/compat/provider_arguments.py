"""The retry and request arguments promptimus 0.1 gave its OpenAI clients, read as today's.

0.1 wrote ``OpenAILike(model, n_retries=5, base_wait=3.0)`` and
``OpenAILikeEmbedder(model, embed_kwargs={...})``; without this they would reach
``AsyncOpenAI(...)`` as unknown client options and fail on the first request.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from promptimus.errors import InvalidArgument

__all__ = ["OriginalKwargs"]


@dataclass(slots=True)
class OriginalKwargs:
    max_retries: int | None = None  # 0.1's n_retries counted attempts, ours counts repeats
    base_delay: float | None = None
    call_kwargs: dict[str, Any] = field(default_factory=dict)
    max_concurrency: int | None = None

    @classmethod
    def take(
        cls,
        owner: str,
        client_kwargs: dict[str, Any],
        call_kwargs_alias: str | None,
        *,
        stacklevel: int = 5,
    ) -> OriginalKwargs:
        """Remove 0.1's names from ``client_kwargs`` (warning once each) and return them;
        ``stacklevel`` points the warnings at the user's constructor call."""
        found = cls()
        if isinstance(client_kwargs.get("api_key"), dict):  # 0.1's 2nd positional: call_kwargs
            found.call_kwargs = client_kwargs.pop("api_key")
            _warn(owner, "model_name, {...}", "call_kwargs={...} by keyword", stacklevel)
            if isinstance(client_kwargs.get("base_url"), int):  # and its 3rd: max_concurrency
                found.max_concurrency = client_kwargs.pop("base_url")
        if "n_retries" in client_kwargs:
            attempts = client_kwargs.pop("n_retries")
            if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
                raise InvalidArgument(f"{owner}: n_retries must be an int >= 1, got {attempts!r}.")
            found.max_retries = attempts - 1
            _warn(
                owner,
                "n_retries=N",
                f"max_retries={attempts - 1} (retries after the first try)",
                stacklevel,
            )
        if "base_wait" in client_kwargs:
            found.base_delay = float(client_kwargs.pop("base_wait"))
            _warn(owner, "base_wait=", "retry=RetryPolicy(base_delay=...)", stacklevel)
        if call_kwargs_alias is not None and call_kwargs_alias in client_kwargs:
            found.call_kwargs = {
                **found.call_kwargs,
                **dict(client_kwargs.pop(call_kwargs_alias) or {}),
            }
            _warn(owner, f"{call_kwargs_alias}=", "call_kwargs=", stacklevel)
        return found


def _warn(owner: str, old: str, new: str, stacklevel: int) -> None:
    warnings.warn(
        f"{owner}({old}) is promptimus 0.1's spelling; use {new} instead.",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
