"""Run a sync tool function on its own daemon thread and await its result.

`asyncio.to_thread` would hand the function to the loop's default executor. A function that never
returns then blocks twice over: `asyncio.run()` waits for the default executor's threads when it
shuts down, and `concurrent.futures` joins every worker thread at interpreter exit. A tool that
hangs must only cost its thread, so each sync call gets a fresh daemon thread that nothing joins:
when the awaiting task gives up (a tool timeout, a cancelled run), the thread is abandoned. Python
cannot stop a running thread, so an abandoned thread keeps running until its function returns
(or the process exits); its result is dropped.

The function runs in a copy of the caller's `contextvars` context, as with `asyncio.to_thread`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["run_in_daemon_thread"]

T = TypeVar("T")


async def run_in_daemon_thread(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`await` the result of `fn(*args, **kwargs)` run on a new daemon thread; cancelling the
    await abandons the thread (see the module docstring)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(error: BaseException | None, value: Any) -> None:
        if future.done():  # the awaiting task gave up
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def target() -> None:
        error: BaseException | None = None
        value: Any = None
        try:
            value = context.run(fn, *args, **kwargs)
        except StopIteration as exc:  # a future refuses StopIteration
            error = RuntimeError(f"StopIteration raised by {fn!r}")
            error.__cause__ = exc
        except BaseException as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
            loop.call_soon_threadsafe(settle, error, value)

    name = getattr(fn, "__name__", type(fn).__name__)
    threading.Thread(target=target, name=f"promptimus-tool-{name}", daemon=True).start()
    return await future
