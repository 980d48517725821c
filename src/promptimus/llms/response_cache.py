"""``ResponseCache``: where a `CachedLLM` keeps replies (`MemoryCache`, `SQLiteCache`, a session
store from `promptimus.sessions`, yours).

A cache maps a request key (a hex SHA-256, see `promptimus.llms.cache_key`) to a reply as JSON
text. It decides nothing: `CachedLLM` chooses what to store and when. A cache that cannot read
or write (a locked or broken file) logs a warning and answers as a miss, since a reply can
always be fetched again; it never fails the call.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["ResponseCache"]


class ResponseCache(Protocol):
    async def get(self, key: str) -> str | None:
        """The reply stored under ``key`` (JSON text), or None."""
        ...

    async def put(self, key: str, value: str) -> None:
        """Store ``value`` under ``key``, replacing what was there."""
        ...
