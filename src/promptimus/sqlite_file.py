"""One SQLite file shared by many processes, threads and event loops: how the SQLite session
store and the SQLite response cache open it and take its write lock.

Each thread has its own connection (a connection is never shared between threads, nor inherited
by a forked child), in autocommit mode (transactions are explicit), with a busy timeout (a
writer waits for another process's write instead of failing), on a file in WAL mode (readers
never wait for a writer). Connections are used inside `using()`, so `close()` never closes one
in the middle of a statement on another thread (which would crash the interpreter).

Switching a file to WAL needs SQLite's exclusive lock, and SQLite does not wait for it while
another connection writes in rollback mode (waiting could deadlock, so it fails at once with
"database is locked", whatever the busy timeout). Processes that open a new file at the same
moment meet exactly that, so the switch is retried until the busy timeout has passed.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
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


class _Opened:
    """One thread's connection, and the lock held while it is in use (`SQLiteFile.using`)."""

    __slots__ = ("closed", "db", "lock", "pid")

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.lock = threading.RLock()
        self.closed = False
        self.pid = os.getpid()


class SQLiteFile:
    """Per-thread connections to the SQLite file `path`; `close()` closes them all, each once it
    is no longer in use."""

    def __init__(self, path: Path, busy_timeout: float, *, secure_delete: bool = False) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.secure_delete = secure_delete  # deleted content is overwritten with zeros
        self._local = threading.local()
        self._opened: list[_Opened] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def using(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection (opened on first use, or again after `close()`), held in
        use for the block: `close()` waits for the block to end before closing it (closing a
        connection another thread is executing on would crash the interpreter)."""
        while True:
            opened = self._opened_here()
            opened.lock.acquire()
            if not opened.closed:
                break
            opened.lock.release()  # closed meanwhile: open another
        try:
            yield opened.db
        finally:
            opened.lock.release()

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use, not held in use: for a statement
        made while nothing may close the file (prefer `using`)."""
        return self._opened_here().db

    def begin(self, db: sqlite3.Connection) -> None:
        """Begin a write transaction (`BEGIN IMMEDIATE`) on `db`, having waited up to the busy
        timeout for another connection's write."""
        db.execute("BEGIN IMMEDIATE")

    def begin_now(self, db: sqlite3.Connection) -> bool:
        """As `begin`, without waiting: False if another connection holds the write lock now."""
        import sqlite3

        db.execute("PRAGMA busy_timeout = 0")
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            return False
        finally:
            try:
                db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return True

    def close(self) -> None:
        """Close every connection (the file stays; a later use reopens it). A connection in use
        on another thread is closed when that use ends: this waits for it."""
        with self._lock:
            opened, self._opened = self._opened, []
        for one in opened:
            if one.pid != os.getpid():
                continue  # the parent's, inherited by a fork: its lock may never be released
            with one.lock:
                one.closed = True
                one.db.close()

    def _opened_here(self) -> _Opened:
        opened: _Opened | None = getattr(self._local, "opened", None)
        if opened is None or opened.closed or opened.pid != os.getpid():
            opened = self._local.opened = _Opened(self._connect())
            with self._lock:
                self._opened.append(opened)
        return opened

    def _connect(self) -> sqlite3.Connection:
        import sqlite3

        db = sqlite3.connect(
            self.path,
            timeout=self.busy_timeout,
            isolation_level=None,  # transactions are explicit
            check_same_thread=False,  # only `close()` touches it from another thread, unused
        )
        try:
            self._use_wal(db)
            db.execute("PRAGMA synchronous=NORMAL")  # durable at checkpoints, safe in WAL
            if self.secure_delete:
                db.execute("PRAGMA secure_delete=ON")
        except BaseException:
            db.close()
            raise
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
