"""Resume ledgers: where an agent notes which paused runs were resumed, so none runs twice.

A paused run's `RunState` carries an `id`; resuming it first claims that id in the ledger, and a
second claim fails (`RunStateConsumed`), so approved tools never run twice for one approval.

The default ledger lives in the process: it refuses a second resume in this process, whichever
agent object resumes it, but two processes (two web workers, a restart) do not see each other's
claims. For that, use a ledger they share:

    set_resume_ledger(SQLiteResumeLedger("resumed.sqlite"))   # one file for all workers

a session store (`promptimus.sessions`: SQLite, PostgreSQL or Redis), or any object with
`claim(state_id) -> bool` (sync or async; True the first time only).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..core.hooks import maybe_await
from ..errors import InvalidArgument

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "ProcessResumeLedger",
    "ResumeLedger",
    "SQLiteResumeLedger",
    "claim_resume",
    "resume_ledger",
    "set_resume_ledger",
]


@runtime_checkable
class ResumeLedger(Protocol):
    """`claim(state_id)` returns True the first time an id is claimed, False after (it may be
    a coroutine function)."""

    def claim(self, state_id: str) -> Any: ...


class ProcessResumeLedger:
    """Claims kept in this process's memory (one short string per resumed pause)."""

    def __init__(self) -> None:
        self._claimed: set[str] = set()
        self._lock = threading.Lock()

    def claim(self, state_id: str) -> bool:
        with self._lock:
            if state_id in self._claimed:
                return False
            self._claimed.add(state_id)
            return True


class SQLiteResumeLedger:
    """Claims kept in one SQLite file, shared safely by every process that opens it (a unique
    key decides who claims first). Old claims are never pruned: a row is a few dozen bytes."""

    def __init__(self, path: str | Path, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS resumed (id TEXT PRIMARY KEY)")

    def _connect(self) -> sqlite3.Connection:
        import sqlite3

        return sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)

    def claim(self, state_id: str) -> bool:
        db = self._connect()
        try:
            cursor = db.execute("INSERT OR IGNORE INTO resumed (id) VALUES (?)", (state_id,))
            return cursor.rowcount == 1
        finally:
            db.close()

    def __repr__(self) -> str:
        return f"SQLiteResumeLedger({str(self.path)!r})"


_ledger: ResumeLedger = ProcessResumeLedger()


def resume_ledger() -> ResumeLedger:
    """The ledger agents claim resumed runs in."""
    return _ledger


def set_resume_ledger(ledger: ResumeLedger) -> ResumeLedger:
    """Use `ledger` for every agent in this process from now on; returns the previous one."""
    global _ledger
    if not isinstance(ledger, ResumeLedger):
        raise InvalidArgument(
            f"A resume ledger needs a claim(state_id) -> bool method; got {type(ledger).__name__}."
        )
    previous, _ledger = _ledger, ledger
    return previous


async def claim_resume(state_id: str) -> bool:
    answer = await maybe_await(_ledger.claim(state_id))
    if not isinstance(answer, bool):
        raise InvalidArgument(
            f"The resume ledger {_ledger!r} returned {type(answer).__name__} from claim(); it must "
            "return True (first claim) or False (already claimed)."
        )
    return answer
