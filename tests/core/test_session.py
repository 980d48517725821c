"""Sessions: per-conversation state for one shared module tree."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

from promptimus import Module, Session, current_session


class History(Module):
    """Keeps its messages in the current session (or in itself outside any session)."""

    def __init__(self) -> None:
        super().__init__()
        self._default: list[str] = []

    def messages(self) -> list[str]:
        session = current_session()
        return self._default if session is None else session.state(self, list)

    async def forward(self, text: str) -> list[str]:
        self.messages().append(text)
        await asyncio.sleep(0)  # let other conversations interleave
        self.messages().append(f"echo:{text}")
        return list(self.messages())


def test_no_session_by_default() -> None:
    assert current_session() is None


def test_state_is_per_session_and_created_once() -> None:
    owner = History()
    alice, bob = Session("alice"), Session("bob")
    a_state = alice.state(owner, list)
    assert alice.state(owner, list) is a_state
    assert bob.state(owner, list) is not a_state
    a_state.append("x")
    assert bob.state(owner, list) == []
    alice.clear()
    assert alice.state(owner, list) == []


def test_state_does_not_keep_its_owner_alive() -> None:
    session = Session()
    owner = History()
    session.state(owner, list).append("x")
    del owner
    gc.collect()
    assert len(session._state) == 0


async def test_sessions_isolate_state_of_one_shared_tree() -> None:
    memory = History()
    alice, bob = Session("alice"), Session("bob")
    with alice:
        assert current_session() is alice
        await memory("hi from alice")
    async with bob:
        assert current_session() is bob
        assert await memory("hi from bob") == ["hi from bob", "echo:hi from bob"]
    with alice:
        assert await memory("again") == [
            "hi from alice",
            "echo:hi from alice",
            "again",
            "echo:again",
        ]
    assert current_session() is None
    assert memory._default == []  # nothing leaked into the sessionless default


def test_nested_sessions_restore_the_outer_one() -> None:
    outer, inner = Session("outer"), Session("inner")
    with outer:
        with inner:
            assert current_session() is inner
        assert current_session() is outer
        with outer:  # re-entering the same session nests too
            assert current_session() is outer
        assert current_session() is outer
    assert current_session() is None


async def test_concurrent_conversations_do_not_leak() -> None:
    memory = History()

    async def converse(name: str) -> list[str]:
        async with Session(name):
            await memory(f"{name}-1")
            return await memory(f"{name}-2")

    results = await asyncio.gather(*(converse(f"user{i}") for i in range(20)))
    for i, history in enumerate(results):
        name = f"user{i}"
        assert history == [f"{name}-1", f"echo:{name}-1", f"{name}-2", f"echo:{name}-2"]


async def test_same_session_entered_by_several_tasks() -> None:
    shared = Session("shared")
    memory = History()
    inside = asyncio.Event()
    release = asyncio.Event()
    seen: list[Any] = []

    async def long_lived() -> None:
        with shared:
            inside.set()
            await asyncio.wait_for(release.wait(), 30)  # bounded: a regression fails, not hangs
            seen.append(current_session())  # still inside, though another task has left
            await memory("long")

    async def short_lived() -> None:
        await asyncio.wait_for(inside.wait(), 30)
        with shared:
            await memory("short")
        seen.append(current_session())
        release.set()

    await asyncio.gather(long_lived(), short_lived())
    assert seen == [None, shared]
    assert current_session() is None
    assert shared.state(memory, list) == ["short", "echo:short", "long", "echo:long"]


async def test_tasks_created_inside_inherit_the_session() -> None:
    memory = History()
    session = Session("parent")

    async def whose() -> Session | None:
        await asyncio.sleep(0)
        return current_session()

    with session:
        child = asyncio.create_task(memory("from task"))
        await asyncio.gather(memory("a"), memory("b"))
        await child
        assert await asyncio.gather(whose(), asyncio.create_task(whose())) == [session, session]
    assert sorted(session.state(memory, list)) == sorted(
        ["from task", "echo:from task", "a", "echo:a", "b", "echo:b"]
    )
    assert memory._default == []


async def test_a_task_entering_a_session_does_not_change_its_parent() -> None:
    async def enter() -> Session | None:
        Session("inside").__enter__()  # never exited: it must stay in the task's own context
        return current_session()

    inner = await asyncio.create_task(enter())
    assert inner is not None and inner.name == "inside"
    assert current_session() is None


def test_repr_names_the_session() -> None:
    assert repr(Session("alice")) == "Session('alice')"
