"""The transport layer on its own: retry policy, rate limiter, concurrency cap, per-loop objects.

The retry policy is duck-typed (an exception with ``status_code`` and ``response.headers``), so
these tests use small stand-in exceptions; the HTTP-level behaviour is covered through the fake
server in test_llm_openai.py.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from virtual_clock import VirtualClock

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


def flaky(*outcomes: BaseException | str) -> tuple[Callable[[], Any], list[int]]:
    """A coroutine function that raises/returns the given outcomes in order; counts its calls."""
    calls: list[int] = []
    queue = list(outcomes)

    async def fn() -> str:
        calls.append(len(calls) + 1)
        item = queue.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    return fn, calls


def recording(policy: RetryPolicy, clock: VirtualClock) -> RetryPolicy:
    """The same policy, its waits recorded by the virtual clock instead of spent."""
    return dataclasses.replace(policy, sleep=clock.sleep)


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


async def test_retries_server_errors_then_succeeds(virtual_clock: VirtualClock) -> None:
    fn, calls = flaky(HTTPStatusError(500), HTTPStatusError(503), "ok")
    policy = recording(RetryPolicy(max_retries=3, base_delay=0.5, max_delay=8.0), virtual_clock)
    assert await policy.run(fn) == "ok"
    assert len(calls) == 3
    # One backoff before each retry, within the full-jitter ceiling of its retry index.
    assert len(virtual_clock.sleeps) == 2
    assert 0 <= virtual_clock.sleeps[0] <= 0.5 and 0 <= virtual_clock.sleeps[1] <= 1.0


async def test_retry_after_header_sets_the_wait(virtual_clock: VirtualClock) -> None:
    fn, calls = flaky(HTTPStatusError(429, headers={"retry-after": "0.25"}), "ok")
    assert await recording(FAST, virtual_clock).run(fn) == "ok"
    assert len(calls) == 2
    assert virtual_clock.sleeps == [0.25]  # the server's wait, not the (tiny) backoff


async def test_retry_after_header_is_really_waited() -> None:
    fn, calls = flaky(HTTPStatusError(429, headers={"retry-after-ms": "200"}), "ok")
    start = time.monotonic()
    assert await FAST.run(fn) == "ok"
    assert time.monotonic() - start >= 0.2  # a lower bound: the default sleep really waits
    assert len(calls) == 2


async def test_retry_after_is_bounded(virtual_clock: VirtualClock) -> None:
    policy = RetryPolicy(max_retries=1, base_delay=0.001, max_retry_after=0.05)
    fn, calls = flaky(HTTPStatusError(429, headers={"retry-after": "30"}), "ok")
    assert await recording(policy, virtual_clock).run(fn) == "ok"
    assert len(calls) == 2
    assert virtual_clock.sleeps == [0.05]  # 30 s asked for, capped by max_retry_after


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


async def test_rate_limiter_window_never_exceeds_limit(virtual_clock: VirtualClock) -> None:
    limiter = RateLimiter(3, period=0.2, clock=virtual_clock, sleep=virtual_clock.sleep)
    starts: list[float] = []

    async def one() -> None:
        starts.append((await limiter.acquire()).start)

    await asyncio.gather(*(one() for _ in range(8)))
    t0 = starts[0]
    # 8 requests at 3 per window: three windows, each admitted the moment its window opens.
    assert [round(s - t0, 9) for s in sorted(starts)] == [0, 0, 0, 0.2, 0.2, 0.2, 0.4, 0.4]
    assert sum(virtual_clock.sleeps) == pytest.approx(0.4)


async def test_token_limiter_weights_and_settle(virtual_clock: VirtualClock) -> None:
    limiter = RateLimiter(100, period=0.3, clock=virtual_clock, sleep=virtual_clock.sleep)
    first = await limiter.acquire(80)
    first.settle(10)  # the request used fewer tokens than estimated: capacity comes back
    await limiter.acquire(80)
    assert virtual_clock.sleeps == []  # 10 + 80 fit: admitted without waiting
    third = await limiter.acquire(50)  # 90 used: must wait for the window to roll
    assert sum(virtual_clock.sleeps) == pytest.approx(0.3)
    assert third.start - first.start == pytest.approx(0.3)


async def test_rate_limiter_really_waits_by_default() -> None:
    limiter = RateLimiter(1, period=0.2)
    first = await limiter.acquire()
    second = await asyncio.wait_for(limiter.acquire(), timeout=30)
    assert second.start - first.start >= 0.2  # a lower bound: the real clock and sleep are used


async def test_oversized_request_runs_alone_instead_of_deadlocking(
    virtual_clock: VirtualClock,
) -> None:
    limiter = RateLimiter(10, period=0.1, clock=virtual_clock, sleep=virtual_clock.sleep)
    big = await asyncio.wait_for(limiter.acquire(50), timeout=30)
    small = await asyncio.wait_for(limiter.acquire(1), timeout=30)
    assert small.start - big.start == pytest.approx(0.1)  # after the big one's window, not never


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


@pytest.mark.parametrize("bad", ["3", 1.5, float("nan"), True, -1])
def test_retry_counts_are_checked_where_given(bad: object) -> None:
    """A string or NaN would make every later comparison with the count quietly false."""
    from promptimus.embedders import OpenAILikeEmbedder
    from promptimus.errors import InvalidArgument
    from promptimus.llms import OpenAILike

    with pytest.raises(InvalidArgument, match="max_retries"):
        OpenAILike("m", api_key="k", base_url="http://127.0.0.1:1", max_retries=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="max_retries"):
        OpenAILikeEmbedder("m", api_key="k", base_url="http://127.0.0.1:1", max_retries=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="base_delay"):
        RetryPolicy(base_delay=float("inf"))
