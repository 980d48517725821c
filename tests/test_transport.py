"""The transport layer on its own: retry policy, rate limiter, concurrency cap, per-loop objects.

The retry policy is duck-typed (an exception with ``status_code`` and ``response.headers``), so
these tests use small stand-in exceptions; the HTTP-level behaviour is covered through the fake
server in test_llm_openai.py.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Callable
from typing import Any

import pytest

from promptimus.errors import ProviderResponseError, ProviderUnavailable, RetryBudgetExhausted
from promptimus.transport import (
    ConcurrencyLimit,
    PerLoop,
    RateLimiter,
    RetryPolicy,
    classify,
    parse_retry_after,
)

FAST = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.005)


class _Response:
    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


class HTTPStatusError(Exception):
    def __init__(self, status: int, message: str = "nope", headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status_code = status
        self.response = _Response(headers or {})
        self.body = {"error": {"message": message}}


def flaky(*outcomes: BaseException | str) -> tuple[Callable[[], Any], list[float]]:
    """A coroutine function that raises/returns the given outcomes in order; records call times."""
    calls: list[float] = []
    queue = list(outcomes)

    async def fn() -> str:
        calls.append(time.monotonic())
        item = queue.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    return fn, calls


# --- Retry-After parsing -------------------------------------------------------------------------


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after-ms": "250"}) == pytest.approx(0.25)
    assert parse_retry_after({"retry-after": "1.5"}) == pytest.approx(1.5)
    assert parse_retry_after({"retry-after-ms": "100", "retry-after": "9"}) == pytest.approx(0.1)
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": date}) or 0) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_classify_statuses() -> None:
    for status in (408, 409, 429, 500, 502, 503):
        failure = classify(HTTPStatusError(status))
        assert failure is not None and failure.retryable and failure.status == status
    for status in (400, 401, 403, 404, 422):
        failure = classify(HTTPStatusError(status))
        assert failure is not None and not failure.retryable
    assert classify(HTTPStatusError(400, headers={"x-should-retry": "true"})).retryable  # type: ignore[union-attr]
    assert classify(ConnectionResetError()).retryable  # type: ignore[union-attr]
    assert classify(TimeoutError()).retryable  # type: ignore[union-attr]
    assert classify(ValueError("a bug")) is None


# --- RetryPolicy.run -----------------------------------------------------------------------------


async def test_retries_server_errors_then_succeeds() -> None:
    fn, calls = flaky(HTTPStatusError(500), HTTPStatusError(503), "ok")
    assert await FAST.run(fn) == "ok"
    assert len(calls) == 3


async def test_retry_after_header_sets_the_wait() -> None:
    fn, calls = flaky(HTTPStatusError(429, headers={"retry-after": "0.25"}), "ok")
    assert await FAST.run(fn) == "ok"
    assert calls[1] - calls[0] >= 0.25


async def test_retry_after_is_bounded() -> None:
    policy = RetryPolicy(max_retries=1, base_delay=0.001, max_retry_after=0.05)
    fn, calls = flaky(HTTPStatusError(429, headers={"retry-after": "30"}), "ok")
    assert await policy.run(fn) == "ok"
    assert calls[1] - calls[0] < 1.0


async def test_non_retryable_status_fails_at_once_with_server_message() -> None:
    fn, calls = flaky(HTTPStatusError(400, "model 'x' does not exist"), "never")
    with pytest.raises(ProviderResponseError, match=r"HTTP 400.*model 'x' does not exist"):
        await FAST.run(fn, context="chat request")
    assert len(calls) == 1


async def test_budget_exhausted_reports_attempts_and_cause() -> None:
    errors = [HTTPStatusError(503, "overloaded") for _ in range(4)]
    fn, calls = flaky(*errors)
    with pytest.raises(RetryBudgetExhausted, match=r"after 4 attempts.*HTTP 503") as info:
        await FAST.run(fn)
    assert isinstance(info.value, ProviderUnavailable)
    assert info.value.__cause__ is errors[-1]
    assert len(calls) == 4


async def test_zero_retries_means_one_attempt() -> None:
    fn, calls = flaky(ConnectionError("refused"), "never")
    with pytest.raises(RetryBudgetExhausted, match="after 1 attempt;"):
        await RetryPolicy(max_retries=0).run(fn)
    assert len(calls) == 1


async def test_unrelated_exceptions_propagate_untouched() -> None:
    fn, calls = flaky(KeyError("bug"), "never")
    with pytest.raises(KeyError):
        await FAST.run(fn)
    assert len(calls) == 1


async def test_secrets_are_redacted_from_errors() -> None:
    secret = "sk-live-abcdef123456"
    fn, _ = flaky(HTTPStatusError(401, f"Incorrect API key provided: {secret}"))
    with pytest.raises(ProviderResponseError) as info:
        await FAST.run(fn, redact=[secret])
    assert secret not in str(info.value)
    assert "Incorrect API key" in str(info.value)


def test_backoff_is_full_jitter_within_the_cap() -> None:
    policy = RetryPolicy(base_delay=0.1, max_delay=0.4)
    samples = [policy.backoff(i) for i in range(6) for _ in range(50)]
    assert all(0.0 <= s <= 0.4 for s in samples)
    assert max(policy.backoff(0) for _ in range(200)) <= 0.1
    assert len({round(s, 6) for s in samples}) > 100  # jittered, not fixed


# --- RateLimiter ---------------------------------------------------------------------------------


async def test_rate_limiter_window_never_exceeds_limit() -> None:
    limiter = RateLimiter(3, period=0.2)
    starts: list[float] = []

    async def one() -> None:
        await limiter.acquire()
        starts.append(time.monotonic())

    await asyncio.gather(*(one() for _ in range(8)))
    starts.sort()
    assert starts[-1] - starts[0] >= 0.4  # 8 starts at 3 per window need three windows
    for i in range(len(starts) - 3):
        assert starts[i + 3] - starts[i] >= 0.2 - 1e-3


async def test_token_limiter_weights_and_settle() -> None:
    limiter = RateLimiter(100, period=0.3)
    first = await limiter.acquire(80)
    first.settle(10)  # the request used fewer tokens than estimated: capacity comes back
    t0 = time.monotonic()
    await limiter.acquire(80)
    assert time.monotonic() - t0 < 0.1
    t0 = time.monotonic()
    await limiter.acquire(50)  # 90 used: must wait for the window to roll
    assert time.monotonic() - t0 >= 0.25


async def test_oversized_request_runs_alone_instead_of_deadlocking() -> None:
    limiter = RateLimiter(10, period=0.1)
    await asyncio.wait_for(limiter.acquire(50), timeout=1)
    await asyncio.wait_for(limiter.acquire(1), timeout=1)


# --- concurrency and event loops -----------------------------------------------------------------


def test_concurrency_limit_caps_in_flight_across_asyncio_run_calls() -> None:
    cap = ConcurrencyLimit(2)

    async def burst() -> int:
        active = peak = 0

        async def work() -> None:
            nonlocal active, peak
            async with cap.slot():
                active += 1
                peak = max(peak, active)
                await asyncio.sleep(0.01)
                active -= 1

        await asyncio.gather(*(work() for _ in range(7)))
        return peak

    assert asyncio.run(burst()) == 2
    assert asyncio.run(burst()) == 2  # a second loop must not trip over the first one's semaphore


def test_per_loop_gives_each_loop_its_own_object() -> None:
    per_loop: PerLoop[object] = PerLoop(object)

    async def get_twice() -> tuple[object, object]:
        return per_loop.get(), per_loop.get()

    a1, a2 = asyncio.run(get_twice())
    b1, _ = asyncio.run(get_twice())
    assert a1 is a2
    assert a1 is not b1
