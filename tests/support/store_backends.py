"""The three session stores as the tests see them: how to build one, what of a conversation is
left in its database, and how to make its writes fail for real.

`backend` (in tests/conftest.py) is parametrized over them, so a test that takes it runs once
per store against a real SQLite file, PostgreSQL server and Redis server.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

KINDS = ("sqlite", "postgres", "redis")


@dataclass
class Backend:
    kind: str
    target: str  # the SQLite file, or the server's URL

    def make(self, **options: Any) -> Any:
        from promptimus.sessions import PostgresSessionStore, RedisSessionStore, SQLiteSessionStore

        if self.kind == "sqlite":
            return SQLiteSessionStore(self.target, **options)
        if self.kind == "postgres":
            return PostgresSessionStore(self.target, **options)
        return RedisSessionStore(self.target, **options)

    def leftovers(self, session_id: str) -> int:
        """Rows or keys of `session_id` still in the database, read past the store."""
        if self.kind == "sqlite":
            with contextlib.closing(sqlite3.connect(self.target)) as db:
                return sum(
                    db.execute(
                        f"SELECT COUNT(*) FROM {table} WHERE session_id = ?", (session_id,)
                    ).fetchone()[0]
                    for table in ("promptimus_sessions", "promptimus_turns")
                )
        if self.kind == "postgres":
            import psycopg

            with psycopg.connect(self.target) as db:
                return sum(
                    db.execute(
                        f"SELECT COUNT(*) FROM {table} WHERE session_id = %s", (session_id,)
                    ).fetchone()[0]  # type: ignore[index]
                    for table in ("promptimus_sessions", "promptimus_turns")
                )
        digest = hashlib.sha256(session_id.encode()).hexdigest()
        with contextlib.closing(self._redis()) as client:
            keys = client.exists(f"promptimus:turns:{digest}", f"promptimus:seq:{digest}")
            indexed = client.zscore("promptimus:sessions", session_id) is not None
            return int(keys) + int(indexed)

    def keys_or_rows(self) -> int:
        """Everything the stores keep, all conversations together."""
        if self.kind == "sqlite":
            with contextlib.closing(sqlite3.connect(self.target)) as db:
                return sum(
                    db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                    for table in ("promptimus_sessions", "promptimus_turns")
                )
        if self.kind == "postgres":
            import psycopg

            with psycopg.connect(self.target) as db:
                return sum(
                    db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # type: ignore[index]
                    for table in ("promptimus_sessions", "promptimus_turns")
                )
        with contextlib.closing(self._redis()) as client:
            return int(client.dbsize())

    @contextlib.contextmanager
    def failing_writes(self) -> Iterator[None]:
        """Inside, appending a turn fails in the database itself: SQLite's write lock is held by
        another connection (the store must be made with a short busy_timeout), PostgreSQL
        refuses new turns with a CHECK constraint, Redis is at its maxmemory."""
        if self.kind == "sqlite":
            with contextlib.closing(sqlite3.connect(self.target, isolation_level=None)) as db:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield
                finally:
                    db.execute("ROLLBACK")
        elif self.kind == "postgres":
            import psycopg

            with psycopg.connect(self.target, autocommit=True) as db:
                db.execute(
                    "ALTER TABLE promptimus_turns ADD CONSTRAINT refuse_turns CHECK (false) "
                    "NOT VALID"
                )
                try:
                    yield
                finally:
                    db.execute("ALTER TABLE promptimus_turns DROP CONSTRAINT refuse_turns")
        else:
            with contextlib.closing(self._redis()) as client:
                client.config_set("maxmemory-policy", "noeviction")
                client.config_set("maxmemory", 1)
                try:
                    yield
                finally:
                    client.config_set("maxmemory", 0)

    def _redis(self) -> Any:
        import redis

        return redis.Redis.from_url(self.target, decode_responses=True)
