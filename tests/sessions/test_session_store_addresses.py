"""A store's address is checked when the store is made: one the driver would misread (and quote
back, password included, in its errors and its pool's WARNING lines) is refused with a named
error that does not quote it; a good one travels without its password in anything the driver
logs; a refused password is named as such at once."""

from __future__ import annotations

import logging
import traceback
from typing import Any
from urllib.parse import quote

import pytest
from postgres_auth import password_user
from servers import free_port

from promptimus.errors import (
    InvalidArgument,
    InvalidStoreAddress,
    SessionStoreAuthenticationFailed,
    SessionStoreUnavailable,
)
from promptimus.sessions import PostgresSessionStore, RedisSessionStore

SECRET = "Hunter2secret"


def everything_said(error: BaseException) -> str:
    return "".join(traceback.format_exception(error)) + repr(error.__context__)


def logged(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(record.getMessage() for record in caplog.records)


@pytest.mark.parametrize(
    "url",
    [
        f"postgresql://app:pa/{SECRET}@127.0.0.1:{{port}}/app",
        f"postgresql://app:pa#{SECRET}@127.0.0.1:{{port}}/app",
        f"postgresql://app:pa?{SECRET}@127.0.0.1:{{port}}/app",
        f"postgresql://app:{SECRET}%zz@127.0.0.1:{{port}}/app",
        f"postgresql://app:{SECRET}@x@127.0.0.1:{{port}}/app",
        f"host=127.0.0.1 port={{port}} user=app password='{SECRET} two words dbname=app",
    ],
)
def test_a_postgres_address_the_driver_would_misread_is_refused_without_quoting_it(
    url: str,
) -> None:
    with pytest.raises(InvalidStoreAddress) as failure:
        PostgresSessionStore(url.format(port=free_port()))
    assert SECRET not in everything_said(failure.value)
    assert "PostgresSessionStore(url=...)" in str(failure.value)
    assert isinstance(failure.value, InvalidArgument)


@pytest.mark.parametrize(
    "url",
    [
        f"redis://:pa/{SECRET}@127.0.0.1:{{port}}/0",
        f"redis://:pa#{SECRET}@127.0.0.1:{{port}}/0",
        f"redis://:{SECRET}%zz@127.0.0.1:{{port}}/0",
        f"redis://:{SECRET}@127.0.0.1:{{port}}/zero",
    ],
)
def test_a_redis_url_redis_py_cannot_read_is_refused_when_the_store_is_made(url: str) -> None:
    with pytest.raises(InvalidStoreAddress) as failure:
        RedisSessionStore(url.format(port=free_port()))
    assert SECRET not in everything_said(failure.value)


async def test_a_quoted_libpq_password_is_masked_in_repr_errors_and_log_lines(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"host=127.0.0.1 port={free_port()} user=app password='{SECRET} two words' dbname=app"
    store = PostgresSessionStore(url, timeout=1)
    assert SECRET not in repr(store) and "words" not in repr(store)
    assert "password=***" in repr(store)
    with pytest.raises(SessionStoreUnavailable) as failure:
        await store.append_turn("alice", "{}")
    await store.aclose()
    assert SECRET not in everything_said(failure.value)
    assert "words" not in everything_said(failure.value)
    assert SECRET not in logged(caplog)


def test_the_driver_log_lines_never_show_a_live_store_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What psycopg's pool logs when a connection fails is its error, which libpq may write
    with the password in it; the store masks its own password in those lines."""
    caplog.set_level(logging.WARNING)
    password = f"{SECRET}/x y"
    store = PostgresSessionStore(f"postgresql://app:{quote(password, safe='')}@127.0.0.1/app")
    pool_log = logging.getLogger("psycopg.pool")
    pool_log.warning("error connecting in %r: %s", "promptimus-sessions", f"bad: {password}")
    pool_log.warning("error connecting: %s", quote(password, safe=""))
    assert SECRET not in logged(caplog)
    assert logged(caplog).count("***") == 2
    del store


async def test_a_wrong_postgres_password_is_an_authentication_failure_at_once(
    postgres_server: Any, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    right = "pa/ss#w%rd two"
    with password_user(postgres_server, postgres_url, "store_signin_user", right) as user:
        where = f"@/{user.database}?host={quote(user.socket_folder, safe='')}"
        wrong = PostgresSessionStore(f"postgresql://{user.name}:{SECRET}{where}", timeout=30)
        with pytest.raises(SessionStoreAuthenticationFailed) as failure:
            await wrong.append_turn("alice", "{}")
        await wrong.aclose()
        assert "refused the user name or password" in str(failure.value)
        assert SECRET not in everything_said(failure.value) + logged(caplog)
        # reported at the first refusal: the pool never went on to retry it
        assert "error connecting" not in logged(caplog)

        good = PostgresSessionStore(
            f"postgresql://{user.name}:{quote(right, safe='')}{where}", timeout=30
        )
        assert await good.append_turn("alice", "{}") == 1
        await good.aclose()
        kv = PostgresSessionStore(
            f"host={user.socket_folder} dbname={user.database} user={user.name} password='{right}'",
            timeout=30,
        )
        assert await kv.append_turn("alice", "{}") == 2
        await kv.aclose()


async def test_a_wrong_redis_password_is_an_authentication_failure(redis_url: str) -> None:
    import redis

    admin = redis.Redis.from_url(redis_url)
    admin.config_set("requirepass", "the-right-one")
    try:
        wrong = redis_url.replace("redis://", f"redis://:{SECRET}@")
        store = RedisSessionStore(wrong, timeout=5)
        with pytest.raises(SessionStoreAuthenticationFailed) as failure:
            await store.load_turns("alice")
        assert SECRET not in everything_said(failure.value)
        await store.aclose()
    finally:
        admin = redis.Redis.from_url(redis_url, password="the-right-one")
        admin.config_set("requirepass", "")
        admin.close()
