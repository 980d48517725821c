"""Session stores: conversations that outlive the process, shared by any number of workers.

    from promptimus.sessions import SQLiteSessionStore, PostgresSessionStore, RedisSessionStore

    store = SQLiteSessionStore("app.db")                    # the standard library: embedded
    store = PostgresSessionStore("postgresql://…")          # promptimus[postgres]
    store = RedisSessionStore("redis://localhost:6379/0")   # promptimus[redis]

    async with pm.Session("alice", store=store):
        await agent("hi, I'm Alice")        # history read from the store, the turn written back

Names are imported lazily: importing this package imports neither psycopg nor redis, and the
SQLite store imports `sqlite3` only when built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

if TYPE_CHECKING:
    from promptimus.sessions.base import SessionStore, StoredTurn
    from promptimus.sessions.postgres import PostgresSessionStore
    from promptimus.sessions.redis import RedisSessionStore
    from promptimus.sessions.sqlite import SQLiteSessionStore

__all__ = [
    "PostgresSessionStore",
    "RedisSessionStore",
    "SQLiteSessionStore",
    "SessionStore",
    "StoredTurn",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "SessionStore": "base",
        "StoredTurn": "base",
        "SQLiteSessionStore": "sqlite",
        "PostgresSessionStore": "postgres",
        "RedisSessionStore": "redis",
    },
    globals(),
)
