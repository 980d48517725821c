"""Run a sync tool function on a daemon thread and await its result.

`asyncio.to_thread` would hand the function to the loop's default executor. A function that never
returns then blocks twice over: `asyncio.run()` waits for the default executor's threads when it
shuts down, and `concurrent.futures` joins every worker thread at interpreter exit. A tool that
hangs must only cost its thread, so sync calls run on daemon threads that nothing joins: when the
awaiting task gives up (a tool timeout, a cancelled run), the thread is abandoned. Python cannot
stop a running thread, so an abandoned thread keeps running until its function returns (or the
process exits); its result is dropped.

Starting a thread per call costs more than the call itself for a quick tool, so a thread that has
finished its call waits `IDLE_SECONDS` for the next one before it exits. The pool has no size:
a thread is reused only once its call has returned, so a hung call holds its own thread and no
other call ever waits behind it (how many calls run at once is the agent's business:
`max_tool_concurrency`). Idle threads are daemons too, so they never delay `asyncio.run()` or
interpreter exit; a forked child starts with no idle threads.

The function runs in a copy of the caller's `contextvars` context, as with `asyncio.to_thread`,
on a thread named `promptimus-tool-<function name>` while it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["IDLE_SECONDS", "run_in_daemon_thread"]

T = TypeVar("T")

IDLE_SECONDS = 30.0
"""How long a finished tool thread waits for another call before it exits."""

_IDLE_NAME = "promptimus-tool-idle"


_Job = Callable[[], Callable[[], None]]
"""Runs the call and returns what hands its outcome to the awaiting loop."""


class _Worker:
    """A daemon thread's mailbox: one job at a time, handed over by `_submit`."""

    __slots__ = ("jobs",)

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()


_idle: list[_Worker] = []  # LIFO: the most recently used thread is reused first
_idle_lock = threading.Lock()


def _forget_idle_threads() -> None:
    global _idle_lock
    _idle.clear()  # their threads do not exist in a forked child
    _idle_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_idle_threads)


def _work(worker: _Worker) -> None:
    thread = threading.current_thread()
    job = worker.jobs.get()
    while True:
        deliver = job()
        thread.name = _IDLE_NAME
        with _idle_lock:  # idle before the caller hears back, so its next call finds us
            _idle.append(worker)
        deliver()
        try:
            job = worker.jobs.get(timeout=IDLE_SECONDS)
        except queue.Empty:
            with _idle_lock:
                if worker in _idle:
                    _idle.remove(worker)
                    return
            job = worker.jobs.get()  # a caller took this thread just now: its job is coming


def _submit(job: _Job) -> None:
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
        worker.jobs.put(job)
        threading.Thread(target=_work, args=(worker,), name=_IDLE_NAME, daemon=True).start()
    else:
        worker.jobs.put(job)


async def run_in_daemon_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`await` the result of `fn(*args, **kwargs)` run on a daemon thread; cancelling the
    await abandons the thread (see the module docstring)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()
    name = f"promptimus-tool-{getattr(fn, '__name__', type(fn).__name__)}"

    def settle(error: BaseException | None, value: Any) -> None:
        if future.done():  # the awaiting task gave up
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def job() -> Callable[[], None]:
        threading.current_thread().name = name
        error: BaseException | None = None
        value: Any = None
        try:
            value = context.run(fn, *args, **kwargs)
        except StopIteration as exc:  # a future refuses StopIteration
            error = RuntimeError(f"StopIteration raised by {fn!r}")
            error.__cause__ = exc
        except BaseException as exc:
            error = exc

        def deliver() -> None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                loop.call_soon_threadsafe(settle, error, value)

        return deliver

    _submit(job)
    return await future
