"""``SQLiteCache``: a response cache in one SQLite file, shared safely by several processes.

The file is in WAL mode (readers never wait for a writer) with a busy timeout (a writer waits
for another process's write instead of failing). Every write is one ``BEGIN IMMEDIATE``
transaction that stores the entry, drops the expired ones and evicts the oldest until the
entries fit ``max_bytes``; triggers keep the running total in the file itself, so every process
sees the same total. Reads run on the caller's thread (a WAL read takes about ten microseconds
and never waits for a writer). A write runs on the caller's thread too when the file is free
(tens of microseconds); when another connection is writing, it moves to a worker thread and
waits there (up to ``busy_timeout``), so the event loop never waits for another process."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from promptimus.argument_checks import positive_int
from promptimus.errors import ResponseCacheError
from promptimus.pickled_settings import PickledAsSettings
from promptimus.sqlite_file import SQLiteFile

if TYPE_CHECKING:
    import sqlite3

__all__ = ["SQLiteCache"]

log = logging.getLogger("promptimus.llms")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS promptimus_responses (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    size INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS promptimus_responses_created ON promptimus_responses (created);
CREATE TABLE IF NOT EXISTS promptimus_cache_total (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    bytes INTEGER NOT NULL
);
INSERT OR IGNORE INTO promptimus_cache_total (id, bytes) VALUES (0, 0);
CREATE TRIGGER IF NOT EXISTS promptimus_responses_added AFTER INSERT ON promptimus_responses
BEGIN
    UPDATE promptimus_cache_total SET bytes = bytes + NEW.size WHERE id = 0;
END;
CREATE TRIGGER IF NOT EXISTS promptimus_responses_removed AFTER DELETE ON promptimus_responses
BEGIN
    UPDATE promptimus_cache_total SET bytes = bytes - OLD.size WHERE id = 0;
END;
"""


class SQLiteCache(PickledAsSettings):
    """Replies in the SQLite file ``path`` (created with its folder's permissions if missing).

    - ``max_bytes``: the most the entries may hold (key plus reply JSON, in bytes; the file
      itself is somewhat larger and does not shrink, SQLite reuses the freed pages). Storing
      past it evicts the oldest entries first; a single reply larger than it is not stored.
    - ``ttl``: seconds an entry is served after it was stored; older ones are misses and are
      deleted by the next write.
    - ``busy_timeout``: seconds a write waits for another process's write before giving up
      (a warning; the reply is simply not stored).
    - ``clock``: the time in seconds (``time.time``); tests inject their own.

    Several processes (and threads, and event loops) may use the same file at once. A read or
    write that fails (a locked, full or broken file) logs a warning and counts as a miss.
    """

    # pickled as its settings: a worker process opens the same file itself
    _positional = "path"
    _settings = ("max_bytes", "ttl", "busy_timeout", "clock")

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int | None = None,
        ttl: float | None = None,
        busy_timeout: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_bytes is not None:
            max_bytes = positive_int(
                max_bytes, "SQLiteCache(max_bytes=...) (or None)", error=ResponseCacheError
            )
        if ttl is not None and not (isinstance(ttl, int | float) and ttl > 0):
            raise ResponseCacheError(
                f"SQLiteCache(ttl=...) must be a number of seconds > 0 or None, got {ttl!r}."
            )
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.ttl = float(ttl) if ttl is not None else None
        self.busy_timeout = busy_timeout
        self.clock = clock
        self._file = SQLiteFile(self.path, busy_timeout)
        self._create()

    def __repr__(self) -> str:
        return f"SQLiteCache({str(self.path)!r}, max_bytes={self.max_bytes}, ttl={self.ttl})"

    # --- connections -------------------------------------------------------------------------

    def _create(self) -> None:
        import sqlite3

        try:
            with self._file.using() as connection:
                try:  # one transaction, so processes creating the same file at once do not clash
                    connection.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")
                except BaseException:
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                    raise
        except sqlite3.Error as exc:
            raise ResponseCacheError(
                f"SQLiteCache cannot use {str(self.path)!r} as a cache ({exc}). Check that its "
                "folder exists and is writable and that the file, if it exists, is an SQLite "
                "database (or pick a new path)."
            ) from exc

    def close(self) -> None:
        """Close every connection (the file stays; a later use reopens it)."""
        self._file.close()

    # --- the cache ---------------------------------------------------------------------------

    async def get(self, key: str) -> str | None:
        return self.get_sync(key)

    async def put(self, key: str, value: str) -> None:
        if not self._put_unless_busy(key, value):
            await asyncio.to_thread(self.put_sync, key, value)

    def _put_unless_busy(self, key: str, value: str) -> bool:
        """Write on the caller's thread if the file is free right now (no waiting: one write
        takes tens of microseconds); False if another connection holds the write lock."""
        import sqlite3

        try:
            with self._file.using() as connection:
                if not self._file.begin_now(connection):
                    return False
                self._commit_write(connection, key, value)
        except sqlite3.Error as exc:  # a broken or vanished file: as in `put_sync`, not stored
            log.warning("SQLiteCache %s: write failed (%s); reply not stored", self.path, exc)
        return True

    def get_sync(self, key: str) -> str | None:
        """`get` without the event loop (from a worker thread, or a script)."""
        import sqlite3

        try:
            with self._file.using() as connection:
                row = connection.execute(
                    "SELECT value, created FROM promptimus_responses WHERE key = ?", (key,)
                ).fetchone()
        except sqlite3.Error as exc:
            log.warning("SQLiteCache %s: read failed (%s); treated as a miss", self.path, exc)
            return None
        if row is None:
            return None
        value, created = row
        if self.ttl is not None and self.clock() - created >= self.ttl:
            return None
        return value  # type: ignore[no-any-return]

    def put_sync(self, key: str, value: str) -> None:
        """`put` without the event loop."""
        import sqlite3

        try:
            with self._file.using() as connection:
                self._file.begin(connection)  # waits up to busy_timeout for other writers
                self._commit_write(connection, key, value)
        except sqlite3.Error as exc:
            log.warning("SQLiteCache %s: write failed (%s); reply not stored", self.path, exc)

    def _commit_write(self, connection: sqlite3.Connection, key: str, value: str) -> None:
        """Finish the write transaction begun on ``connection``: store, expire, evict, commit."""
        import sqlite3

        try:
            try:
                self._write(connection, key, value)
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            log.warning("SQLiteCache %s: write failed (%s); reply not stored", self.path, exc)

    def _write(self, connection: sqlite3.Connection, key: str, value: str) -> None:
        size = len(key) + len(value.encode())
        if self.max_bytes is not None and size > self.max_bytes:
            log.debug("SQLiteCache %s: a %d-byte reply exceeds max_bytes", self.path, size)
            return
        now = self.clock()
        connection.execute("DELETE FROM promptimus_responses WHERE key = ?", (key,))
        connection.execute(
            "INSERT INTO promptimus_responses (key, value, size, created) VALUES (?, ?, ?, ?)",
            (key, value, size, now),
        )
        if self.ttl is not None:
            connection.execute(
                "DELETE FROM promptimus_responses WHERE created <= ?", (now - self.ttl,)
            )
        if self.max_bytes is None:
            return
        (total,) = connection.execute(
            "SELECT bytes FROM promptimus_cache_total WHERE id = 0"
        ).fetchone()
        excess = total - self.max_bytes
        if excess <= 0:
            return
        oldest: list[tuple[Any]] = []
        rows = connection.execute(
            "SELECT key, size FROM promptimus_responses ORDER BY created, rowid"
        )
        for old_key, old_size in rows:
            oldest.append((old_key,))
            excess -= old_size
            if excess <= 0:
                break
        rows.close()
        connection.executemany("DELETE FROM promptimus_responses WHERE key = ?", oldest)

    # --- inspection --------------------------------------------------------------------------

    def __len__(self) -> int:
        query = "SELECT COUNT(*) FROM promptimus_responses"
        with self._file.using() as connection:
            (count,) = connection.execute(query).fetchone()
        return int(count)

    @property
    def total_bytes(self) -> int:
        """What the stored entries hold (keys plus replies), as counted against ``max_bytes``."""
        with self._file.using() as connection:
            query = "SELECT bytes FROM promptimus_cache_total WHERE id = 0"
            (total,) = connection.execute(query).fetchone()
        return int(total)

    def clear(self) -> None:
        """Delete every entry (in this file, for every process using it)."""
        with self._file.using() as connection:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("DELETE FROM promptimus_responses")
            connection.execute("COMMIT")
