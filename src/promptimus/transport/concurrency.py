"""A cap on in-flight requests that works from any event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from promptimus.argument_checks import positive_int
from promptimus.transport.per_loop import PerLoop


class ConcurrencyLimit:
    """At most ``limit`` holders at once (per event loop; a provider is normally used from one)."""

    __slots__ = ("_semaphores", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = positive_int(limit, "max_concurrency (or None for no cap)")
        self._semaphores: PerLoop[asyncio.Semaphore] = PerLoop(lambda: asyncio.Semaphore(limit))

    async def acquire(self) -> asyncio.Semaphore:
        """Take a slot; call ``release()`` on the returned semaphore when done."""
        semaphore = self._semaphores.get()
        await semaphore.acquire()
        return semaphore

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        semaphore = await self.acquire()
        try:
            yield
        finally:
            semaphore.release()

    def __repr__(self) -> str:
        return f"ConcurrencyLimit({self.limit})"
