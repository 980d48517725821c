"""`RateLimitedClient`: the original promptimus' base for a client with a concurrency limit and
retries, mapped onto `promptimus.transport` (one concurrency cap, one retry policy).

Subclass it, list the exceptions worth retrying in `RETRY_ERRORS`, implement `_request`, and
call `await self.execute_request(...)`. Besides `RETRY_ERRORS`, every failure the transport
layer knows as transient (HTTP 429/5xx, timeouts, connection errors) is retried too. When every
attempt failed, `RetryBudgetExhausted` (the original's `ProviderRetryExceded`) is raised with
the last error as its `__cause__`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, TypeVar

from promptimus.argument_checks import positive_int
from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.retry import Failure, RetryPolicy, classify

T = TypeVar("T")


class _DeclaredRetries(RetryPolicy):
    """The transport's retry policy, plus the client's own retryable exception types."""

    __slots__ = ("retry_errors",)

    def __init__(self, retry_errors: tuple[type[BaseException], ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.retry_errors = retry_errors

    def classify(self, exc: BaseException) -> Failure | None:
        if self.retry_errors and isinstance(exc, self.retry_errors):
            return Failure(True, f"{type(exc).__name__}: {exc}")
        return classify(exc)


class RateLimitedClient(ABC, Generic[T]):
    """A client whose requests share a concurrency cap and retry with exponential backoff.

    `n_retries` is the number of attempts (as in the original); `base_wait` seconds is the first
    backoff ceiling, doubled on each further attempt (full jitter, as the rest of promptimus).
    """

    RETRY_ERRORS: ClassVar[tuple[type[BaseException], ...]] = ()

    def __init__(self, max_concurrency: int = 10, n_retries: int = 5, base_wait: float = 3.0):
        n_retries = positive_int(n_retries, "n_retries (the number of attempts)")
        self._limit = ConcurrencyLimit(max_concurrency)
        self._retry = _DeclaredRetries(
            tuple(self.RETRY_ERRORS),
            max_retries=n_retries - 1,
            base_delay=base_wait,
            max_delay=base_wait * 2.0 ** (n_retries - 1),
        )

    @abstractmethod
    async def _request(self, *args: Any, **kwargs: Any) -> T: ...

    async def execute_request(self, *args: Any, **kwargs: Any) -> T:
        """Run `_request(*args, **kwargs)` under the concurrency cap, retrying what may pass."""

        async def attempt() -> T:
            async with self._limit.slot():
                return await self._request(*args, **kwargs)

        return await self._retry.run(attempt, context=type(self).__name__)
