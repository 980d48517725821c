"""One SQLite file shared by many processes, threads and event loops: how the SQLite session
store and the SQLite response cache open it and take its write lock.

Each thread has its own connection (a connection is never shared between threads, nor inherited
by a forked child), in autocommit mode (transactions are explicit), with a busy timeout (a
writer waits for another process's write instead of failing), on a file in WAL mode (readers
never wait for a writer).

Switching a file to WAL needs SQLite's exclusive lock, and SQLite does not wait for it while
another connection writes in rollback mode (waiting could deadlock, so it fails at once with
"database is locked", whatever the busy timeout). Processes that open a new file at the same
moment meet exactly that, so the switch is retried until the busy timeout has passed.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

__all__ = ["BUSY_CODES", "SQLiteFile"]

# sqlite3 result codes (the low byte of `sqlite_errorcode`) meaning another connection holds a lock
_BUSY, _LOCKED = 5, 6
BUSY_CODES = (_BUSY, _LOCKED)


def is_busy(exc: BaseException) -> bool:
    """Whether `exc` (an `sqlite3.Error`) says another connection holds the lock."""
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF in BUSY_CODES


class SQLiteFile:
    """Per-thread connections to the SQLite file `path`; `close()` closes them all."""

    def __init__(self, path: Path, busy_timeout: float) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        local = self._local
        db = getattr(local, "db", None)
        if db is None or local.pid != os.getpid():
            db = local.db = self._connect()
            local.pid = os.getpid()
        return db

    def begin(self) -> sqlite3.Connection:
        """This thread's connection in a write transaction (`BEGIN IMMEDIATE`), having waited up
        to the busy timeout for another connection's write."""
        db = self.connection()
        db.execute("BEGIN IMMEDIATE")
        return db

    def begin_now(self) -> sqlite3.Connection | None:
        """As `begin`, without waiting: None if another connection holds the write lock now."""
        import sqlite3

        db = self.connection()
        db.execute("PRAGMA busy_timeout = 0")
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            return None
        finally:
            try:
                db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return db

    def close(self) -> None:
        """Close every connection (the file stays; a later use reopens it)."""
        with self._lock:
            connections, self._connections = self._connections, []
        for db in connections:
            db.close()
        self._local = threading.local()

    def _connect(self) -> sqlite3.Connection:
        import sqlite3

        db = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout,
            isolation_level=None,  # transactions are explicit
            check_same_thread=False,  # only `close()` touches it from another thread
        )
        try:
            self._use_wal(db)
            db.execute("PRAGMA synchronous=NORMAL")  # durable at checkpoints, safe in WAL
        except BaseException:
            db.close()
            raise
        with self._lock:
            self._connections.append(db)
        return db

    def _use_wal(self, db: sqlite3.Connection) -> None:
        import sqlite3

        deadline = time.monotonic() + self.busy_timeout
        pause = 0.001
        while True:
            try:
                db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                left = deadline - time.monotonic()
                if not is_busy(exc) or left <= 0:
                    raise
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.05)
