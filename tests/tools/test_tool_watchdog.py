"""Tool timeouts kept by the watchdog thread (tools/watchdog.py): a call past its timeout is a
`ToolTimeout`, a cancellation from outside stays a cancellation, a shorter deadline armed after
a longer one still fires first, a call arms no event-loop timer, and disarmed deadlines do not
pile up."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from promptimus.errors import ToolTimeout
from promptimus.tools import Tool, watchdog

CAP = 30.0  # a regression fails after this many seconds instead of hanging the suite


async def never_returns() -> str:
    """Wait forever."""
    await asyncio.Event().wait()
    return "unreachable"


async def test_a_shorter_deadline_armed_after_a_longer_one_fires_first() -> None:
    patient = Tool(never_returns, name="patient", timeout=CAP)
    hasty = Tool(never_returns, name="hasty", timeout=0.05)
    waiting = asyncio.create_task(patient.call({}))
    await asyncio.sleep(0)  # the long deadline is armed: the watchdog sleeps until it
    try:
        with pytest.raises(ToolTimeout, match=r"'hasty' did not return within 0\.05 s"):
            await asyncio.wait_for(hasty.call({}), CAP)
        assert not waiting.done()  # its own deadline is far off
    finally:
        waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_a_cancellation_from_outside_is_not_a_timeout() -> None:
    tool = Tool(never_returns, name="hang", timeout=CAP)
    task = asyncio.create_task(tool.call({}))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def test_the_task_is_usable_after_a_timeout() -> None:
    # the watchdog's cancellation is taken back: the same task awaits on normally afterwards
    hang = Tool(never_returns, name="hang", timeout=0.05)
    with pytest.raises(ToolTimeout):
        await hang.call({})
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0.01)

    @Tool.decorate(timeout=CAP)
    async def quick() -> str:
        """Answer."""
        return "ok"

    assert await quick.call({}) == "ok"


async def test_a_call_arms_no_event_loop_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    armed: list[float] = []
    real_call_at = loop.call_at

    def counting_call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        armed.append(when)
        return real_call_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counting_call_at)

    @Tool.decorate(timeout=CAP)
    async def echo(text: str) -> str:
        """Echo."""
        await asyncio.sleep(0)
        return text

    for i in range(20):
        assert await echo.call({"text": str(i)}) == str(i)
    assert armed == []


async def test_disarmed_deadlines_do_not_pile_up() -> None:
    @Tool.decorate(timeout=3600)
    async def echo(text: str) -> str:
        """Echo."""
        return text

    for _ in range(3000):
        await echo.call({"text": "x"})
    # an hour-long deadline never reaches the top of the heap by itself: only the rebuild
    # keeps the heap from holding every call ever made
    assert len(watchdog._watchdog._heap) <= 2 * watchdog._COMPACT_ABOVE + 2


async def test_arming_outside_a_task_is_refused() -> None:
    result: list[BaseException] = []

    def in_a_callback() -> None:
        try:
            watchdog.arm(1.0)
        except RuntimeError as exc:
            result.append(exc)

    asyncio.get_running_loop().call_soon(in_a_callback)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert result and "task" in str(result[0])


async def test_a_disarmed_deadline_keeps_nothing_alive() -> None:
    import gc
    import weakref

    async def run_once() -> weakref.ref[asyncio.Task[Any]]:
        @Tool.decorate(timeout=3600)
        async def echo(text: str) -> str:
            """Echo."""
            return text

        task = asyncio.create_task(echo.call({"text": "x" * 1000}))
        assert await task == "x" * 1000
        return weakref.ref(task)

    ref = await run_once()
    for _ in range(3):  # the loop's own handles let go of the finished task
        await asyncio.sleep(0)
    gc.collect()
    # its hour-long entry is still in the watchdog's heap, but the finished task is gone
    assert ref() is None


async def test_a_deadline_and_an_outside_cancellation_together_stay_a_cancellation() -> None:
    # the loop is held while the deadline passes, so the watchdog's cancellation and ours are
    # both pending when the call resumes: ours must win, and only ours must be left counted
    tool = Tool(never_returns, name="hang", timeout=0.05)
    task = asyncio.create_task(tool.call({}))
    await asyncio.sleep(0)  # armed
    loop = asyncio.get_running_loop()

    def hold_then_cancel() -> None:
        import time

        time.sleep(0.3)  # the deadline passes; the watchdog queues its cancellation meanwhile
        task.cancel()

    loop.call_soon(hold_then_cancel)
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, CAP)
    assert task.cancelled()


def test_deadlines_of_event_loops_in_several_threads_each_cancel_their_own_call() -> None:
    import threading

    outcomes: dict[int, list[str]] = {}

    def one_loop(index: int) -> None:
        async def calls() -> list[str]:
            hang = Tool(never_returns, name="hang", timeout=0.02)

            @Tool.decorate(timeout=CAP)
            async def quick() -> str:
                """Return at once."""
                return "ok"

            seen = []
            for _ in range(10):
                try:
                    await asyncio.wait_for(hang.call({}), CAP)
                except ToolTimeout:
                    seen.append("timeout")
                seen.append(await asyncio.wait_for(quick.call({}), CAP))
                task = asyncio.current_task()
                assert task is not None and task.cancelling() == 0
            return seen

        outcomes[index] = asyncio.run(calls())

    threads = [threading.Thread(target=one_loop, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(CAP)
    assert outcomes == {i: ["timeout", "ok"] * 10 for i in range(4)}
