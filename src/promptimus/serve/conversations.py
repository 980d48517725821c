"""The conversations a server without a store keeps in its own memory: at most a fixed number,
the least recently used forgotten first, so callers naming ever new conversation ids cannot
grow the server's memory without end. With a store the store keeps them, and this is unused."""

from __future__ import annotations

from collections import OrderedDict

from ..core.session import Session

__all__ = ["DEFAULT_MAX_CONVERSATIONS", "Conversations"]

DEFAULT_MAX_CONVERSATIONS = 10_000


class Conversations:
    """`limit` sessions by their scoped id, in order of last use."""

    __slots__ = ("_sessions", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def get(self, key: str) -> Session:
        """The session `key` names, made on first use; the least recently used one is
        forgotten when there would be more than `limit`."""
        session = self._sessions.get(key)
        if session is None:
            session = self._sessions[key] = Session(key)
            while len(self._sessions) > self.limit:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(key)
        return session

    def __len__(self) -> int:
        return len(self._sessions)

    def __repr__(self) -> str:  # the ids name callers: not shown
        return f"Conversations({len(self)} of at most {self.limit})"
