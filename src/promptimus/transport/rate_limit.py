"""Sliding-window rate limits (requests or tokens per period) shared by every task using a provider.

The limiter keeps a log of admitted weights with their start times; a request is admitted only if
the weights started in the last ``period`` seconds plus its own stay within ``limit``. So no window
of ``period`` seconds ever contains more than ``limit`` — the guarantee RPM/TPM quotas need, which a
refilling token bucket (that allows a full burst at each window edge) does not give.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable

from promptimus.argument_checks import finite_number
from promptimus.transport.per_loop import PerLoop


class Reservation:
    """One admitted request; ``settle`` corrects its weight once the real cost is known."""

    __slots__ = ("_limiter", "live", "start", "weight")

    def __init__(self, limiter: RateLimiter, start: float, weight: float) -> None:
        self._limiter = limiter
        self.start = start
        self.weight = weight
        self.live = True

    def settle(self, actual: float) -> None:
        self._limiter._settle(self, actual)


class RateLimiter:
    """Admit at most ``limit`` units of weight per sliding window of ``period`` seconds.

    Waiters on one event loop are served first come, first served. A single request heavier than
    the whole limit is admitted alone once the window is empty, rather than blocking forever.
    ``clock`` (seconds, monotonic) and ``sleep`` are the time source and the wait; tests pass a
    virtual clock so they check admissions without depending on how busy the machine is.
    """

    def __init__(
        self,
        limit: float,
        period: float = 60.0,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        # checked here: a NaN limit compares false with everything and made every call wait
        # out a whole window
        self.limit = finite_number(limit, "the rate limit (units per period)", positive=True)
        self.period = finite_number(period, "the rate period (seconds)", positive=True)
        self._clock = clock
        self._sleep = sleep
        self._log: deque[Reservation] = deque()
        self._used = 0.0
        self._lock = threading.Lock()
        self._queues: PerLoop[asyncio.Lock] = PerLoop(asyncio.Lock)

    def _expire(self, now: float) -> None:
        log = self._log
        horizon = now - self.period
        while log and log[0].start <= horizon:
            entry = log.popleft()
            entry.live = False
            self._used -= entry.weight
        if not log:
            self._used = 0.0  # drop accumulated float error

    def _try_admit(self, weight: float) -> Reservation | float:
        """Admit now (returns the reservation) or return how long to wait before trying again."""
        with self._lock:
            now = self._clock()
            self._expire(now)
            if self._used + weight <= self.limit or not self._log:
                entry = Reservation(self, now, weight)
                self._log.append(entry)
                self._used += weight
                return entry
            excess = self._used + weight - self.limit
            for entry in self._log:
                excess -= entry.weight
                if excess <= 0:
                    return entry.start + self.period - now
            return self._log[-1].start + self.period - now

    async def acquire(self, weight: float = 1.0) -> Reservation:
        """Wait until ``weight`` fits in the current window, then record it as started now."""
        queue = self._queues.get()
        if not queue.locked():
            admitted = self._try_admit(weight)
            if isinstance(admitted, Reservation):
                return admitted
        async with queue:
            while True:
                admitted = self._try_admit(weight)
                if isinstance(admitted, Reservation):
                    return admitted
                await self._sleep(max(admitted, 0.001))

    def _settle(self, entry: Reservation, actual: float) -> None:
        with self._lock:
            if entry.live:
                self._used += actual - entry.weight
            entry.weight = actual

    def __repr__(self) -> str:
        return f"RateLimiter(limit={self.limit:g}, period={self.period:g})"
