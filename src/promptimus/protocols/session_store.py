"""What `Session(name, store=...)` needs from a session store: an append-only log of turns per
conversation. The stores themselves (SQLite, PostgreSQL, Redis) live in `promptimus.sessions`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["SessionStore", "StoredTurn"]


@dataclass(frozen=True, slots=True)
class StoredTurn:
    """One turn as stored: its number in the conversation and its JSON text."""

    seq: int
    payload: str


@runtime_checkable
class SessionStore(Protocol):
    """What `Session(name, store=...)` needs from a store."""

    async def load_turns(self, session_id: str, since: int = 0) -> list[StoredTurn]:
        """The turns numbered `since` and up, oldest first ([] for an unknown, deleted or
        expired conversation)."""
        ...

    async def append_turn(self, session_id: str, payload: str) -> int:
        """Append one turn atomically; returns its number."""
        ...

    async def list_sessions(self) -> list[str]:
        """The ids of the conversations kept (not expired), sorted."""
        ...

    async def delete(self, session_id: str) -> bool:
        """Erase a conversation, every turn of it; True if there was one."""
        ...

    async def prune(self) -> int:
        """Delete the conversations idle past `ttl`; returns how many."""
        ...

    async def aclose(self) -> None:
        """Close the store's connections (a later use opens new ones). Every store is also an
        async context manager that closes it on exit."""
        ...
