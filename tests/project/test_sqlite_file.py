"""Opening a shared SQLite file (promptimus.sqlite_file), as the SQLite session store and the
SQLite response cache do: a store or cache opened while another process writes to a file not
yet in WAL mode waits for that write instead of failing (SQLite itself does not wait to switch a
file to WAL), and still fails with its named error once the busy timeout has passed."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from promptimus.errors import ResponseCacheError, SessionStoreUnavailable
from promptimus.llms.sqlite_cache import SQLiteCache
from promptimus.sessions import SQLiteSessionStore

OPENERS: dict[str, Callable[..., Any]] = {"store": SQLiteSessionStore, "cache": SQLiteCache}


@contextlib.contextmanager
def writing_in_rollback_mode(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection in the middle of a write to `path`, a file in SQLite's default
    (rollback journal) mode, as when a second process creates the same new file."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute("CREATE TABLE elsewhere (x)")
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO elsewhere VALUES (1)")
        yield db
    finally:
        db.close()


@pytest.mark.parametrize("kind", sorted(OPENERS))
def test_opening_waits_for_a_write_in_progress_instead_of_failing(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "shared.db"
    opened: list[Any] = []
    failed: list[BaseException] = []

    def open_it() -> None:
        try:
            opened.append(OPENERS[kind](path, busy_timeout=120))
        except BaseException as exc:
            failed.append(exc)

    with writing_in_rollback_mode(path) as writer:
        opening = threading.Thread(target=open_it)
        opening.start()
        time.sleep(0.3)  # long enough for the opener to meet the write lock (not a bound)
        writer.execute("COMMIT")
        opening.join(300)
    assert not opening.is_alive()
    assert failed == []
    (opened_one,) = opened
    try:
        journal = opened_one._file.connection().execute("PRAGMA journal_mode").fetchone()[0]
        assert journal == "wal"
    finally:
        opened_one.close()


@pytest.mark.parametrize(
    ("kind", "error"), [("store", SessionStoreUnavailable), ("cache", ResponseCacheError)]
)
def test_a_write_longer_than_the_busy_timeout_is_a_named_error(
    tmp_path: Path, kind: str, error: type[Exception]
) -> None:
    path = tmp_path / "shared.db"
    with writing_in_rollback_mode(path), pytest.raises(error, match="locked"):
        OPENERS[kind](path, busy_timeout=0.2)
