"""``MemoryCache``: a response cache in this process's memory, least recently used out first."""

from __future__ import annotations

import threading
from collections import OrderedDict

from promptimus.argument_checks import positive_int
from promptimus.errors import ResponseCacheError

__all__ = ["MemoryCache"]


class MemoryCache:
    """Holds at most ``max_entries`` replies; storing one more drops the least recently used
    (read or written). Thread-safe, so event loops in several threads may share it. Lives as
    long as the object: use `SQLiteCache` to keep replies across runs and processes."""

    def __init__(self, max_entries: int = 1024) -> None:
        self.max_entries = positive_int(
            max_entries, "MemoryCache(max_entries=...)", error=ResponseCacheError
        )
        self._entries: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    async def get(self, key: str) -> str | None:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    async def put(self, key: str, value: str) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __repr__(self) -> str:
        return f"MemoryCache({len(self._entries)}/{self.max_entries} entries)"
