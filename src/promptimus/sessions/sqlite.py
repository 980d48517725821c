"""`SQLiteSessionStore`: conversations in one SQLite file (the standard library's `sqlite3`), the
embedded default. Several processes may share the file: one machine, many workers.

Two tables: `promptimus_sessions` (one row per conversation: its last turn number and when it
was last written) and `promptimus_turns` (one row per turn, primary key (session, number)).
Appending a turn is one `BEGIN IMMEDIATE` transaction (SQLite's single writer lock: the next
number is read and taken under it), so turns from many processes are numbered without gaps
or duplicates. The file is in WAL mode: readers never wait for a writer.

Reads run on the caller's thread (a WAL read never waits for a writer). A write runs there too
when the file is free; when another connection holds the write lock, it moves to a worker
thread and waits there (up to `busy_timeout`), so the event loop never waits for another
process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from ..errors import (
    InvalidStoreAddress,
    SessionStoreCorrupt,
    SessionStoreError,
    SessionStoreFull,
    SessionStoreUnavailable,
)
from ..pickled_settings import PickledAsSettings
from ..sqlite_file import BUSY_CODES, SQLiteFile
from .base import Clock, StoredTurn, check_limits, check_session_id, check_wait

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SQLiteSessionStore"]

log = logging.getLogger("promptimus.sessions")
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS promptimus_sessions (
    session_id TEXT PRIMARY KEY,
    last_seq INTEGER NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS promptimus_sessions_updated ON promptimus_sessions (updated);
CREATE TABLE IF NOT EXISTS promptimus_turns (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    payload TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS promptimus_cached_replies (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS promptimus_resumed_runs (id TEXT PRIMARY KEY);
"""

# sqlite3 result codes (the low byte of `sqlite_errorcode`)
_READONLY, _CORRUPT, _FULL, _CANTOPEN, _NOTADB = 8, 11, 13, 14, 26


class SQLiteSessionStore(PickledAsSettings):
    """Conversations in the SQLite file `path` (created if missing; its folder must exist).

    - `max_turns`: keep at most this many turns per conversation, the newest (None: all).
    - `ttl`: seconds a conversation is kept after its last turn; an older one reads as empty
      and is deleted by `prune()` or by its next turn (None: kept until deleted).
    - `busy_timeout`: seconds a write waits for another process's write before failing.
    - `clock`: the time in seconds (`time.time`); tests inject their own.
    """

    # pickled as its settings: a worker process opens the same file itself
    _positional = "path"
    _settings = ("max_turns", "ttl", "busy_timeout", "clock")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_turns: int | None = None,
        ttl: float | None = None,
        busy_timeout: float = 30.0,
        clock: Clock = time.time,
    ) -> None:
        self.ttl = check_limits("SQLiteSessionStore", max_turns, ttl)
        self.max_turns = max_turns
        self.path = _shared_file(path)
        self.busy_timeout = check_wait(
            "SQLiteSessionStore", "busy_timeout", busy_timeout, positive=False
        )
        self.clock = clock
        # what a conversation erased leaves is overwritten (see `_scrub`)
        self._file = SQLiteFile(self.path, self.busy_timeout, secure_delete=True)
        self._create()

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self.path)!r})"

    # --- conversations -----------------------------------------------------------------------

    async def load_turns(self, session_id: str, since: int = 0) -> list[StoredTurn]:
        check_session_id(session_id)
        rows = self._read(
            "SELECT t.seq, t.payload FROM promptimus_turns AS t JOIN promptimus_sessions AS s "
            "ON s.session_id = t.session_id WHERE t.session_id = ? AND t.seq >= ? "
            "AND s.updated > ? ORDER BY t.seq",
            (session_id, since, self._expired_before()),
        )
        return [StoredTurn(seq, payload) for seq, payload in rows]

    async def append_turn(self, session_id: str, payload: str) -> int:
        check_session_id(session_id)
        expired: list[bool] = []
        seq = await self._write(lambda db: self._append(db, session_id, payload, expired))
        if expired:
            self._scrub()
        return seq

    def _append(
        self, db: sqlite3.Connection, session_id: str, payload: str, expired: list[bool]
    ) -> int:
        now = self.clock()
        row = db.execute(
            "SELECT last_seq, updated FROM promptimus_sessions WHERE session_id = ?",
            (session_id,),
        ).fetchone()
        seq = 1 if row is None else row[0] + 1
        if row is not None and row[1] <= self._expired_before(now):
            # expired: nothing of the old conversation may come back; the numbering goes on, so
            # a reader that cached it sees its last turn gone and reads the conversation again
            db.execute("DELETE FROM promptimus_turns WHERE session_id = ?", (session_id,))
            expired.append(True)
        db.execute(
            "INSERT OR REPLACE INTO promptimus_sessions (session_id, last_seq, updated) "
            "VALUES (?, ?, ?)",
            (session_id, seq, now),
        )
        db.execute(
            "INSERT INTO promptimus_turns (session_id, seq, payload, created) VALUES (?, ?, ?, ?)",
            (session_id, seq, payload, now),
        )
        if self.max_turns is not None and seq > self.max_turns:
            db.execute(
                "DELETE FROM promptimus_turns WHERE session_id = ? AND seq <= ?",
                (session_id, seq - self.max_turns),
            )
        return seq

    async def list_sessions(self) -> list[str]:
        rows = self._read(
            "SELECT session_id FROM promptimus_sessions WHERE updated > ? ORDER BY session_id",
            (self._expired_before(),),
        )
        return [session_id for (session_id,) in rows]

    async def delete(self, session_id: str) -> bool:
        check_session_id(session_id)

        def delete(db: sqlite3.Connection) -> bool:
            db.execute("DELETE FROM promptimus_turns WHERE session_id = ?", (session_id,))
            gone = db.execute("DELETE FROM promptimus_sessions WHERE session_id = ?", (session_id,))
            return gone.rowcount > 0

        existed = await self._write(delete)
        self._scrub()
        return existed

    async def prune(self) -> int:
        if self.ttl is None:
            return 0
        cutoff = self._expired_before()

        def prune(db: sqlite3.Connection) -> int:
            db.execute(
                "DELETE FROM promptimus_turns WHERE session_id IN (SELECT session_id FROM "
                "promptimus_sessions WHERE updated <= ?)",
                (cutoff,),
            )
            gone = db.execute("DELETE FROM promptimus_sessions WHERE updated <= ?", (cutoff,))
            return gone.rowcount

        pruned = await self._write(prune)
        if pruned:
            self._scrub()
        return pruned

    def _scrub(self) -> None:
        """After an erase: move the WAL into the file and empty it. The file's copy of the erased
        rows was overwritten with zeros (`secure_delete`), but the WAL still holds the pages
        as they were when the turns were written, until a checkpoint empties it."""
        import sqlite3

        try:
            with self._file.using() as db:
                busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.Error as exc:
            raise self._error(exc, "erase") from None
        if busy:
            log.warning(
                "%r: a reader kept the WAL from being emptied after an erase; the erased turns "
                "leave it at the next checkpoint",
                self,
            )

    def _expired_before(self, now: float | None = None) -> float:
        if self.ttl is None:
            return -math.inf
        return (self.clock() if now is None else now) - self.ttl

    # --- a response cache for CachedLLM, and a resume ledger ----------------------------------

    async def get(self, key: str) -> str | None:
        """A cached reply (`CachedLLM`); a failed read is a miss, with a warning."""
        try:
            rows = self._read("SELECT value FROM promptimus_cached_replies WHERE key = ?", (key,))
        except SessionStoreError as exc:
            log.warning("%s: cache read failed (%s); treated as a miss", self, exc)
            return None
        return rows[0][0] if rows else None

    async def put(self, key: str, value: str) -> None:
        """Store a reply (`CachedLLM`); a failed write is logged and skipped."""

        def put(db: sqlite3.Connection) -> None:
            db.execute(
                "INSERT OR REPLACE INTO promptimus_cached_replies (key, value) VALUES (?, ?)",
                (key, value),
            )

        try:
            await self._write(put)
        except SessionStoreError as exc:
            log.warning("%s: cache write failed (%s); reply not stored", self, exc)

    async def claim(self, state_id: str) -> bool:
        """True the first time a paused run's id is claimed, across every process (the resume
        ledger: `set_resume_ledger(store)`)."""

        def claim(db: sqlite3.Connection) -> bool:
            cursor = db.execute(
                "INSERT OR IGNORE INTO promptimus_resumed_runs (id) VALUES (?)", (state_id,)
            )
            return cursor.rowcount == 1

        return await self._write(claim)

    # --- connections -------------------------------------------------------------------------

    def _create(self) -> None:
        def create(db: sqlite3.Connection) -> None:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)

        self._write_sync(create)

    def _read(self, query: str, parameters: tuple[Any, ...]) -> list[Any]:
        import sqlite3

        try:
            with self._file.using() as db:
                return db.execute(query, parameters).fetchall()
        except sqlite3.Error as exc:
            raise self._error(exc, "read") from None

    async def _write(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """`body(db)` in one write transaction, on this thread if the file is free now, else
        on a worker thread that waits for the other writer."""
        import sqlite3

        with self._opened("write") as db:
            try:
                free = self._file.begin_now(db)
            except sqlite3.Error as exc:
                raise self._error(exc, "write") from None
            if free:
                return self._finish(db, body)
        return await self._write_waiting(body)

    @contextlib.contextmanager
    def _opened(self, what: str) -> Iterator[sqlite3.Connection]:
        """`SQLiteFile.using`, a file that cannot be opened being a named error."""
        import sqlite3

        try:
            with self._file.using() as db:
                yield db
        except sqlite3.Error as exc:
            raise self._error(exc, what) from None

    async def _write_waiting(self, body: Callable[[sqlite3.Connection], T]) -> T:
        """`body` on a worker thread that waits for the write lock. Cancelled while it waits or
        runs, it writes nothing: the thread rolls back instead of committing. Cancelled once
        its commit has begun, the write stands and is returned (the cancellation comes too
        late to take it back, and a caller told "cancelled" must be able to trust that nothing
        was written)."""
        gate = _CommitGate()
        future = asyncio.ensure_future(asyncio.to_thread(self._write_sync, body, gate))
        future.add_done_callback(_retrieve)  # a write abandoned by its caller may still fail
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if gate.abandon():
                raise
        result = await future  # committing now: it ends within a statement
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        return result

    def _write_sync(
        self, body: Callable[[sqlite3.Connection], T], gate: _CommitGate | None = None
    ) -> T:
        import sqlite3

        with self._opened("write") as db:
            try:
                self._file.begin(db)  # waits up to busy_timeout for other writers
            except sqlite3.Error as exc:
                raise self._error(exc, "write") from None
            return self._finish(db, body, gate)

    def _finish(
        self,
        db: sqlite3.Connection,
        body: Callable[[sqlite3.Connection], T],
        gate: _CommitGate | None = None,
    ) -> T:
        """Run `body` in the transaction begun on `db` and commit (or roll back and raise; or
        roll back and raise `_Abandoned` if `gate` says the caller has gone)."""
        import sqlite3

        try:
            try:
                result = body(db)
                if gate is not None and not gate.commit():
                    raise _Abandoned
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._error(exc, "write") from None
        return result

    def _error(self, exc: sqlite3.Error, what: str) -> SessionStoreError:
        code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
        where = f"{self!r} could not {what}"
        if code == _FULL:
            return SessionStoreFull(
                f"{where}: the disk (or the file's size limit) is full ({exc}). Free space or "
                "prune old conversations (`ttl=` and `await store.prune()`, `max_turns=`)."
            )
        if code in (_CORRUPT, _NOTADB):
            return SessionStoreCorrupt(
                f"{where}: the file is not a readable SQLite database ({exc}). Restore it from a "
                "backup or point the store at a new file."
            )
        if code in BUSY_CODES:
            return SessionStoreUnavailable(
                f"{where}: another connection held the file for longer than busy_timeout="
                f"{self.busy_timeout:g}s ({exc}). Raise busy_timeout or find the stuck writer."
            )
        if code in (_CANTOPEN, _READONLY):
            return SessionStoreUnavailable(
                f"{where}: the file cannot be opened for writing ({exc}). Check that its folder "
                "exists and is writable."
            )
        return SessionStoreError(f"{where} ({type(exc).__name__}: {exc}).")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        # on a thread: closing waits for the connections other threads are using
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Close every connection, each once no thread is using it (the file stays; a later
        use reopens it)."""
        self._file.close()


class _Abandoned(Exception):
    """A waiting write whose caller was cancelled: rolled back, never committed."""


class _CommitGate:
    """Decides, once, between a waiting write's commit and its caller's cancellation."""

    __slots__ = ("_lock", "_state")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "open"

    def commit(self) -> bool:
        """Called by the writing thread before COMMIT: False if the caller has gone."""
        with self._lock:
            if self._state == "abandoned":
                return False
            self._state = "committing"
            return True

    def abandon(self) -> bool:
        """Called on cancellation: False if the commit has already begun."""
        with self._lock:
            if self._state == "committing":
                return False
            self._state = "abandoned"
            return True


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Mark a write's outcome as seen (an abandoned one has no other reader)."""
    if not future.cancelled():
        future.exception()


def _shared_file(path: object) -> Path:
    """`path` as one file every thread and process opens: SQLite gives `":memory:"` and `""`
    each connection a private database of its own (each thread would see an empty one)."""
    if not isinstance(path, str | os.PathLike):
        raise InvalidStoreAddress(
            f"SQLiteSessionStore(path=...) must be a file path, got {type(path).__name__}."
        )
    text = os.fspath(path)
    if text in ("", ":memory:"):
        raise InvalidStoreAddress(
            f"SQLiteSessionStore({text!r}) would give each thread an empty database of its own: "
            "give it a file path (a temporary file for tests), or use a Session without a store "
            "to keep conversations in memory."
        )
    return Path(text)
