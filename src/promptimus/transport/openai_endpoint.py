"""``OpenAIEndpoint``: what every client of an OpenAI-compatible endpoint shares.

The chat provider and the embedder differ in the request they send; the rest is common and
lives here once: the lazily built SDK client (key redaction included), the one retry policy,
the concurrency cap, requests- and tokens-per-minute limits, and cumulative usage accounting.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, ClassVar

from promptimus.argument_checks import finite_number
from promptimus.dto import Usage
from promptimus.observe.provider_calls import report_usage
from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.openai_client import OpenAIClientFactory
from promptimus.transport.rate_limit import RateLimiter, Reservation
from promptimus.transport.retry import RetryPolicy
from promptimus.transport.secret_scrub import shown_url

__all__ = ["CHARS_PER_TOKEN", "OpenAIEndpoint"]

CHARS_PER_TOKEN = 4
"""The estimate used to reserve tokens before a request; the reported usage corrects it."""


def _limiter(value: float | RateLimiter | None, period: float, name: str) -> RateLimiter | None:
    if value is None or isinstance(value, RateLimiter):
        return value
    limit = finite_number(value, f"{name} (or None for no limit)", positive=True)
    return RateLimiter(limit, finite_number(period, "rate_period (seconds)", positive=True))


class OpenAIEndpoint:
    """Base of `OpenAILike` and `OpenAILikeEmbedder` (see their docstrings for the options)."""

    _request_kind: ClassVar[str] = "request"  # named in error messages: "<kind> request for ..."
    _key_required: ClassVar[bool] = True  # False: a server that takes no key is asked without one

    def __init__(
        self,
        model_name: str,
        api_key: str | None,
        base_url: str | None,
        *,
        max_concurrency: int | ConcurrencyLimit | None,
        max_retries: int,
        timeout: float | None,
        requests_per_minute: float | RateLimiter | None,
        tokens_per_minute: float | RateLimiter | None,
        rate_period: float,
        call_kwargs: dict[str, Any] | None,
        retry: RetryPolicy | None,
        api_key_env: str | None,
        client_kwargs: dict[str, Any],
    ) -> None:
        self.model_name = model_name
        if timeout is not None:
            where = f"{type(self).__name__}: timeout (seconds, or None)"
            timeout = finite_number(timeout, where, positive=True)
        self._factory = OpenAIClientFactory(
            api_key,
            base_url,
            api_key_env=api_key_env,
            timeout=timeout,
            client_kwargs=client_kwargs,
            key_required=self._key_required,
        )
        self.retry = retry if retry is not None else RetryPolicy(max_retries=max_retries)
        if isinstance(max_concurrency, int):
            max_concurrency = ConcurrencyLimit(max_concurrency)
        self._slots = max_concurrency
        self._rpm = _limiter(requests_per_minute, rate_period, "requests_per_minute")
        self._tpm = _limiter(tokens_per_minute, rate_period, "tokens_per_minute")
        self.call_kwargs: dict[str, Any] = dict(call_kwargs or {})
        self._lock = threading.Lock()
        self._usage = Usage()
        self._request_count = 0

    @property
    def base_url(self) -> str | None:
        return self._factory.base_url

    def secrets(self) -> tuple[str, ...]:
        """The credentials this provider sends (its API key), for redaction from any text."""
        return self._factory.secrets()

    @property
    def max_concurrency(self) -> int | None:
        """The cap on requests in flight (None: no cap)."""
        return self._slots.limit if self._slots is not None else None

    @property
    def usage(self) -> Usage:
        """Tokens used by every completed request so far."""
        return self._usage

    @property
    def request_count(self) -> int:
        """Number of completed requests."""
        return self._request_count

    def reset_usage(self) -> None:
        with self._lock:
            self._usage = Usage()
            self._request_count = 0

    # --- request plumbing ------------------------------------------------------------------

    @property
    def _context(self) -> str:
        return (
            f"{self._request_kind} request for model {self.model_name!r} at "
            f"{shown_url(self.base_url) or 'api.openai.com'}"
        )

    async def _admit(self, tokens: float) -> tuple[asyncio.Semaphore | None, Reservation | None]:
        """Take a concurrency slot, then pass the rate limits (in that order, so a request
        starts right when the limiter admits it). The caller releases the slot."""
        slot = await self._slots.acquire() if self._slots is not None else None
        try:
            if self._rpm is not None:
                await self._rpm.acquire()
            reservation = await self._tpm.acquire(tokens) if self._tpm is not None else None
        except BaseException:
            if slot is not None:
                slot.release()
            raise
        return slot, reservation

    def _record(self, usage: Usage | None, reservation: Reservation | None) -> None:
        """Count a completed request, add its usage, and settle its token reservation."""
        report_usage(usage)  # to the module's call in progress (usage per module, budgets)
        with self._lock:
            self._request_count += 1
            if usage is not None:
                self._usage = self._usage + usage
        if reservation is not None and usage is not None and usage.total_tokens:
            reservation.settle(usage.total_tokens)
