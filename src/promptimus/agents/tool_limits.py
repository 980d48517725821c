"""Tool-call limits of an agent: how many of its tool executions may be in flight at once
(`max_tool_concurrency`) and how many calls of one reply run (`max_tool_calls_per_step`).

The concurrency bound belongs to the agent object, not to a run: concurrent runs on one agent
(one per `Session`, the normal case in a server) share it, so a burst of runs cannot start more
than `max_tool_concurrency` tool executions between them. Sync tools count like async ones: a
call holds its slot for as long as the agent waits for it. A sync tool that times out is
abandoned (see `promptimus.tools.daemon_thread`) and gives its slot back: a tool that hangs for
good would otherwise take a slot with it on every timeout until the agent could run no tool.

A run of the agent started from inside one of its own tool calls (a tool that calls the agent
again) would wait for a slot its caller holds: with every slot held that way, nothing could
finish. Such a nested run gets slots of its own (as many again) instead.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..errors import InvalidArgument

__all__ = ["DEFAULT_MAX_TOOL_CONCURRENCY", "ToolSlots", "check_tool_limit"]

T = TypeVar("T")

DEFAULT_MAX_TOOL_CONCURRENCY = 8
"""Tool executions one agent runs at once, unless it is given another `max_tool_concurrency`."""


def check_tool_limit(value: Any, what: str) -> int | None:
    """`value` if it is None (no limit) or a whole number >= 1, else `InvalidArgument`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(
            f"{what} must be a whole number >= 1, or None for no limit; got {value!r}."
        )
    return value


# the ToolSlots whose slot the current task is running a tool call under
_held: contextvars.ContextVar[tuple[ToolSlots, ...]] = contextvars.ContextVar(
    "promptimus_tool_slots_held", default=()
)


class ToolSlots:
    """At most `limit` tool calls in flight (None: no bound), shared by every run of the agent
    that owns it. An `asyncio.Semaphore` belongs to one event loop, so there is one per loop,
    made when a loop first needs it. A copy or an unpickled agent gets fresh slots."""

    __slots__ = ("_by_loop", "_last", "_lock", "limit")

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._by_loop = weakref.WeakKeyDictionary()
        self._last: tuple[asyncio.AbstractEventLoop | None, asyncio.Semaphore | None] = (None, None)
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type[ToolSlots], tuple[int | None]]:
        return (ToolSlots, (self.limit,))

    def for_run(self) -> asyncio.Semaphore | None:
        """The semaphore one batch of tool calls must take slots from (None: unbounded)."""
        if self.limit is None:
            return None
        if self in _held.get():  # a run nested in one of this agent's own tool calls
            return asyncio.Semaphore(self.limit)
        loop = asyncio.get_running_loop()
        last_loop, semaphore = self._last
        if last_loop is loop and semaphore is not None:
            return semaphore
        with self._lock:
            semaphore = self._by_loop.get(loop)
            if semaphore is None:
                semaphore = self._by_loop[loop] = asyncio.Semaphore(self.limit)
            self._last = (loop, semaphore)
        return semaphore

    async def run(
        self, semaphore: asyncio.Semaphore, fn: Callable[..., Awaitable[T]], *args: Any
    ) -> T:
        """`await fn(*args)` holding one slot of `semaphore` (from `for_run`)."""
        async with semaphore:
            token = _held.set((*_held.get(), self))
            try:
                return await fn(*args)
            finally:
                _held.reset(token)

    def __repr__(self) -> str:
        return f"ToolSlots(limit={self.limit})"
