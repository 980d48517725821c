"""Total deadlines: for a whole request, and for each event of a stream.

An HTTP client's timeout bounds each read, so a server that sends a byte now and then holds a
request as long as it likes. `within` bounds a whole piece of work; `EventDeadline` gives each
event of a stream the whole limit from the one before it (from its start, for the first). Past
either, the caller's ``expired()`` error is raised (its SDK's timeout error, so the retry layer
treats it as any timeout and names one it gives up on `ProviderTimeout`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

__all__ = ["EventDeadline", "within"]

T = TypeVar("T")
E = TypeVar("E")


async def within(
    limit: float | None, work: Awaitable[T], expired: Callable[[], BaseException]
) -> T:
    """Await ``work`` within ``limit`` seconds (None: no limit); past it, ``expired()``."""
    if limit is None:
        return await work
    try:
        async with asyncio.timeout(limit) as scope:
            return await work
    except TimeoutError:
        if not scope.expired():
            raise
        raise expired() from None


class EventDeadline:
    """The deadline of a stream's next event: ``limit`` seconds after the last `restart` (the
    first `next` starts the clock); None: no limit."""

    __slots__ = ("_deadline", "_expired", "limit")

    def __init__(self, limit: float | None, expired: Callable[[], BaseException]) -> None:
        self.limit = limit
        self._expired = expired
        self._deadline: float | None = None

    def restart(self) -> None:
        """An event arrived whole: the next one has the whole limit again."""
        if self.limit is not None:
            self._deadline = asyncio.get_running_loop().time() + self.limit

    async def next(self, source: AsyncIterator[E], end: T) -> E | T:
        """The next item of ``source`` (``end`` once it ended), before the deadline."""
        if self.limit is None:
            return await anext(source, end)
        if self._deadline is None:
            self.restart()
        assert self._deadline is not None
        try:
            async with asyncio.timeout_at(self._deadline) as scope:
                return await anext(source, end)
        except TimeoutError:
            if not scope.expired():
                raise
            raise self._expired() from None
