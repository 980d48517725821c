"""Tool-call deadlines kept by one watchdog thread, not by the event loop's timer heap.

`asyncio.timeout` arms a loop timer for every call. While any timer is pending, each time the
loop goes idle it sleeps in `epoll_wait` with a finite timeout, which makes the kernel arm and
cancel a high-resolution timer; on a virtual machine that traps to the hypervisor. A tool call
that waits on a server (an MCP tool: several idle waits per call) paid about 30 us of CPU for
its timeout that way, about 5 % of the whole call (bench/mcp_overhead.py).

Here a deadline is an entry in a heap that one daemon thread watches. Arming one takes a lock
and a heap push; the thread is only woken when a new deadline is earlier than the one it sleeps
until (with equal timeouts, each new one is later, so a stream of calls never wakes it). When a
deadline passes before it is disarmed, the thread asks the task's loop to cancel the task (the
loop does it, in its own thread); `Deadline.expired` then tells the caller that the cancellation
was its own, as `asyncio.timeout` does, and takes that cancellation back.

Disarmed entries stay in the heap until they reach its top or until they outnumber the live
ones, when the heap is rebuilt without them. A forked child starts with an empty heap and
starts its own thread on its first deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["Deadline", "arm"]

_COMPACT_ABOVE = 256
"""The heap is rebuilt without disarmed entries once it is this long and they are most of it."""


class Deadline:
    """One armed deadline for the task that armed it (see `arm`)."""

    __slots__ = ("_cancelling", "_done", "_fired", "_loop", "_taken_back", "_task")

    def __init__(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self._loop: asyncio.AbstractEventLoop | None = loop
        self._task: asyncio.Task[Any] | None = task
        self._cancelling = task.cancelling()
        self._done = False  # disarmed, or fired
        self._fired = False  # the task was cancelled for this deadline
        self._taken_back = False

    def _expire(self) -> None:
        # in the loop's thread, so it never races `disarm`
        if not self._done and self._task is not None:
            self._done = True
            self._fired = True
            self._task.cancel()

    def expired(self) -> bool:
        """Called on `CancelledError`: True if the cancellation was this deadline's and no other
        is pending (then the caller raises its own timeout error instead)."""
        if not self._fired or self._taken_back or self._task is None:
            return False
        self._taken_back = True
        return self._task.uncancel() <= self._cancelling

    def disarm(self) -> None:
        """The call is over (in a `finally`): forget the deadline; if it fired just as the call
        ended, take its cancellation back."""
        if not self._done:
            self._done = True
            # the entry may wait in the heap until its time: it must not keep the task (and
            # what the task holds) or a closed loop alive that long
            self._task = self._loop = None
            _watchdog.disarmed += 1
        elif self._fired and not self._taken_back and self._task is not None:
            self._taken_back = True
            self._task.uncancel()


class _Watchdog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._wake_at = math.inf
        self._thread: threading.Thread | None = None
        self.disarmed = 0  # disarmed entries still in the heap (a hint for compaction)

    def arm(self, seconds: float) -> Deadline:
        task = asyncio.current_task()
        if task is None:  # awaiting always happens in a task; a bare callback cannot await
            raise RuntimeError("a deadline needs a running asyncio task")
        deadline = Deadline(task.get_loop(), task)
        when = time.monotonic() + seconds
        with self._lock:  # the condition's own lock: `notify` below may be called holding it
            heap = self._heap
            if len(heap) > _COMPACT_ABOVE and self.disarmed * 2 > len(heap):
                heap[:] = [entry for entry in heap if not entry[2]._done]
                heapq.heapify(heap)
                self.disarmed = 0
            heapq.heappush(heap, (when, next(self._order), deadline))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._watch, name="promptimus-tool-deadlines", daemon=True
                )
                self._thread.start()
            elif when < self._wake_at:
                self._cond.notify()
        return deadline

    def _watch(self) -> None:
        with self._cond:
            heap = self._heap
            while True:
                now = time.monotonic()
                while heap and (heap[0][2]._done or heap[0][0] <= now):
                    _, _, deadline = heapq.heappop(heap)
                    if deadline._done:
                        self.disarmed = max(0, self.disarmed - 1)
                        continue
                    loop = deadline._loop  # None if disarmed since the check above
                    if loop is not None:
                        # a closed loop: nobody is waiting any more
                        with contextlib.suppress(RuntimeError):
                            loop.call_soon_threadsafe(deadline._expire)
                self._wake_at = heap[0][0] if heap else math.inf
                # bounded even when idle, so the thread never sleeps past a missed notify
                self._cond.wait(min(self._wake_at - now, 3600.0))

    def forget(self) -> None:
        """In a forked child: the thread did not survive the fork."""
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._heap = []
        self._wake_at = math.inf
        self._thread = None
        self.disarmed = 0


_watchdog = _Watchdog()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_watchdog.forget)


arm: Callable[[float], Deadline] = _watchdog.arm
"""`arm(seconds)`: a deadline `seconds` from now for the current task; past it, the task is
cancelled unless `disarm()` was called first."""
