"""Objects that belong to one event loop (asyncio primitives, HTTP clients), kept per loop.

asyncio locks, semaphores and pooled HTTP connections bind to the loop that first used them; a
provider outlives loops (notebooks, several ``asyncio.run`` calls), so it keeps one per loop.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerLoop(Generic[T]):
    """Lazily create one ``factory()`` result per running event loop."""

    __slots__ = ("_factory", "_items", "_last", "_lock")

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._items: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()
        self._last: tuple[asyncio.AbstractEventLoop, T] | None = None

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last[0] is loop:
            return last[1]
        with self._lock:
            item = self._items.get(loop)
            if item is None:
                item = self._factory()
                self._items[loop] = item
            self._last = (loop, item)
            return item
