"""A stored turn that cannot be read as one (nested past the recursion limit, changes that are
not a list of [key, change] pairs, a Redis entry that is not UTF-8) is `SessionStoreCorrupt`
naming the store and the conversation, never a raw Python error, nor read as something else."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

import promptimus as pm
from promptimus.errors import SessionStoreCorrupt

DEEP = 100_000  # far past any recursion limit


@pytest.mark.parametrize(
    "payload",
    [
        '{"v":1,"changes":' + "[" * DEEP + "]" * DEEP + "}",
        '{"v":1,"changes":[["root.predictor",' + "[" * DEEP + "]" * DEEP + "]]}",
        '{"v":1,"changes":{"ab":["extend",[]]}}',
        '{"v":1,"changes":["ab"]}',
        '{"v":1,"changes":[["root.predictor"]]}',
    ],
    ids=["nested", "a-nested-change", "changes-an-object", "a-change-a-string", "a-lone-key"],
)
async def test_a_turn_that_is_not_a_turn_is_corrupt(backend: Any, payload: str) -> None:
    store = backend.make()
    try:
        await store.append_turn("alice", payload)
        session = pm.Session("alice", store=store)
        with pytest.raises(SessionStoreCorrupt, match="alice") as failure:
            await session.load()
            session.state(object(), list, key="root.predictor")
        assert failure.value.__cause__ is None
    finally:
        await store.aclose()


async def test_a_redis_entry_that_is_not_utf8_is_corrupt(redis_url: str) -> None:
    import redis

    from promptimus.sessions import RedisSessionStore

    digest = hashlib.sha256(b"alice").hexdigest()
    with redis.Redis.from_url(redis_url) as client:
        client.zadd(f"promptimus:turns:{digest}", {b'1:{"v":1,"changes":[]}\xff\xfe': 1})
        client.set(f"promptimus:seq:{digest}", 1)
    store = RedisSessionStore(redis_url)
    try:
        with pytest.raises(SessionStoreCorrupt, match="not UTF-8"):
            await store.load_turns("alice")
        with pytest.raises(SessionStoreCorrupt):
            await pm.Session("alice", store=store).load()
        assert await store.append_turn("bob", "{}") == 1  # the connection still serves
    finally:
        await store.aclose()
