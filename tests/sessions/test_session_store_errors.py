"""A store that is unreachable, full or corrupt raises a named error naming the store, never the
password in its URL; bad settings are refused before anything runs."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest
from servers import free_port

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.errors import (
    InvalidArgument,
    SessionStoreCorrupt,
    SessionStoreError,
    SessionStoreFull,
    SessionStoreUnavailable,
)
from promptimus.llms import ScriptedLLM
from promptimus.sessions import PostgresSessionStore, RedisSessionStore, SQLiteSessionStore

SECRET = "hunter2-Secret-9"


def everything_said(error: BaseException) -> str:
    """What a log line or an error tracker would show: the message and the whole chain."""
    return "".join(traceback.format_exception(error)) + repr(error.__context__)


async def test_an_unreachable_postgres_is_named_without_its_password() -> None:
    port = free_port()  # nothing listens there
    for url in (
        f"postgresql://bob:{SECRET}@127.0.0.1:{port}/app",
        f"host=127.0.0.1 port={port} user=bob password={SECRET} dbname=app",
    ):
        store = PostgresSessionStore(url, timeout=1)
        with pytest.raises(SessionStoreUnavailable) as failure:
            await store.append_turn("alice", "{}")
        assert "PostgresSessionStore(" in str(failure.value)
        assert SECRET not in everything_said(failure.value)
        assert SECRET not in repr(store) and "***" in repr(store)
        await store.aclose()


async def test_an_unreachable_redis_is_named_without_its_password() -> None:
    store = RedisSessionStore(f"redis://:{SECRET}@127.0.0.1:{free_port()}/0", timeout=1)
    with pytest.raises(SessionStoreUnavailable) as failure:
        await store.load_turns("alice")
    assert "RedisSessionStore('redis://:***@127.0.0.1" in str(failure.value)
    assert SECRET not in everything_said(failure.value)
    await store.aclose()


async def test_a_wrong_redis_password_is_unavailable_and_not_quoted(redis_url: str) -> None:
    import redis

    admin = redis.Redis.from_url(redis_url)
    admin.config_set("requirepass", "the-right-one")
    try:
        wrong = redis_url.replace("redis://", f"redis://:{SECRET}@")
        store = RedisSessionStore(wrong, timeout=2)
        with pytest.raises(SessionStoreUnavailable) as failure:
            async with pm.Session("alice", store=store):
                await OpenaiToolCallingAgent("Hi.").with_llm(ScriptedLLM(["x"]))("hello")
        assert SECRET not in everything_said(failure.value)
        await store.aclose()
    finally:
        admin = redis.Redis.from_url(redis_url, password="the-right-one")
        admin.config_set("requirepass", "")
        admin.close()


async def test_a_redis_key_holding_other_data_is_corrupt(redis_url: str) -> None:
    import hashlib

    import redis

    digest = hashlib.sha256(b"alice").hexdigest()
    with redis.Redis.from_url(redis_url) as client:
        client.set(f"promptimus:turns:{digest}", "someone else's value")
    store = RedisSessionStore(redis_url)
    with pytest.raises(SessionStoreCorrupt, match="RedisSessionStore"):
        await store.load_turns("alice")
    await store.aclose()


def test_an_sqlite_file_in_a_missing_folder_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(SessionStoreUnavailable, match="folder exists and is writable"):
        SQLiteSessionStore(tmp_path / "no" / "such" / "folder" / "app.db")


def test_a_file_that_is_not_a_database_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    path.write_bytes(b"these are not the pages of an SQLite database" * 100)
    with pytest.raises(SessionStoreCorrupt, match="not a readable SQLite database"):
        SQLiteSessionStore(path)
    assert path.read_bytes().startswith(b"these are not")  # left as it was


async def test_a_full_sqlite_file_is_named_and_the_turn_not_answered(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "app.db")
    pages = store._file.connection().execute("PRAGMA page_count").fetchone()[0]
    store._file.connection().execute(f"PRAGMA max_page_count = {pages + 1}")  # a disk with no room
    agent = OpenaiToolCallingAgent("Hi.").with_llm(ScriptedLLM(["ok"]))
    with pytest.raises(SessionStoreFull, match="SQLiteSessionStore"):
        async with pm.Session("alice", store=store):
            await agent("x" * 20_000)
    assert await store.list_sessions() == []


@pytest.mark.parametrize(
    "options",
    [{"max_turns": 0}, {"max_turns": True}, {"ttl": 0}, {"ttl": -1}, {"ttl": float("nan")}],
)
def test_bad_limits_are_refused_by_every_store(options: dict[str, Any], tmp_path: Path) -> None:
    for make in (
        lambda: SQLiteSessionStore(tmp_path / "a.db", **options),
        lambda: PostgresSessionStore("postgresql://localhost/x", **options),
        lambda: RedisSessionStore("redis://localhost/0", **options),
    ):
        with pytest.raises(InvalidArgument, match=next(iter(options))):
            make()


def test_every_store_error_is_a_session_store_error() -> None:
    for error in (SessionStoreUnavailable, SessionStoreFull, SessionStoreCorrupt):
        assert issubclass(error, SessionStoreError)
        assert issubclass(error, pm.PromptimusError)


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda p: SQLiteSessionStore(p, busy_timeout=float("nan")), "busy_timeout"),
        (lambda p: SQLiteSessionStore(p, busy_timeout=float("inf")), "busy_timeout"),
        (lambda p: SQLiteSessionStore(p, busy_timeout="30"), "busy_timeout"),
        (lambda p: SQLiteSessionStore(p, busy_timeout=-1), "busy_timeout"),
        (lambda p: SQLiteSessionStore(p, busy_timeout=1e30), "busy_timeout"),
        (lambda p: SQLiteSessionStore(p, busy_timeout=True), "busy_timeout"),
        (lambda p: PostgresSessionStore("postgresql://h/db", timeout=float("nan")), "timeout"),
        (lambda p: PostgresSessionStore("postgresql://h/db", timeout=0), "timeout"),
        (lambda p: PostgresSessionStore("postgresql://h/db", timeout="10"), "timeout"),
        (lambda p: PostgresSessionStore("postgresql://h/db", timeout=1e30), "timeout"),
        (lambda p: PostgresSessionStore("postgresql://h/db", min_size=5, max_size=2), "min_size"),
        (lambda p: PostgresSessionStore("postgresql://h/db", max_size=0), "max_size"),
        (lambda p: PostgresSessionStore("postgresql://h/db", min_size=-1), "min_size"),
        (lambda p: PostgresSessionStore("postgresql://h/db", max_size=2.5), "max_size"),
        (lambda p: RedisSessionStore("redis://h/0", timeout="10"), "timeout"),
        (lambda p: RedisSessionStore("redis://h/0", timeout=float("inf")), "timeout"),
        (lambda p: RedisSessionStore("redis://h/0", timeout=-5), "timeout"),
    ],
)
def test_bad_waits_and_pool_sizes_are_refused_when_the_store_is_made(
    make: Any, named: str, tmp_path: Path
) -> None:
    with pytest.raises(InvalidArgument, match=named):
        make(tmp_path / "app.db")


def test_the_largest_and_smallest_good_waits_are_kept(tmp_path: Path) -> None:
    assert SQLiteSessionStore(tmp_path / "a.db", busy_timeout=0).busy_timeout == 0.0
    assert PostgresSessionStore("postgresql://h/db", timeout=2_000_000).timeout == 2e6
    assert RedisSessionStore("redis://h/0", timeout=0.5).timeout == 0.5


@pytest.mark.parametrize("path", [":memory:", "", Path(":memory:")])
def test_an_in_memory_sqlite_store_is_refused(path: Any) -> None:
    from promptimus.errors import InvalidStoreAddress

    with pytest.raises(InvalidStoreAddress, match="empty database of its own"):
        SQLiteSessionStore(path)
