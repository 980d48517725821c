"""A conversation erased (deleted, or expired) and started anew under the same id is another
conversation: a worker that had read the old one never sends it to the model again, nor builds
on it, though the new one numbers its turns from 1 again. Two workers here are two store objects
on the same database (each keeps its own cache of what it read), against each real store."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.llms import ScriptedLLM

POLLS = 2_000  # rounds of 10 ms: only so a broken run fails instead of hanging the suite


def seen(history: list[Message], kwargs: dict[str, Any]) -> str:
    return "seen: " + " | ".join(m.content for m in history if m.role == MessageRole.USER)


def worker(llm: Any = None) -> OpenaiToolCallingAgent:
    return OpenaiToolCallingAgent("You help.").with_llm(llm or ScriptedLLM(seen))


async def erase(backend: Any, store: Any, how: str, now: list[float]) -> None:
    if how == "delete":
        assert await store.delete("alice")
    elif backend.kind == "redis":  # Redis expires the keys itself
        for _ in range(POLLS):
            if not await store.load_turns("alice"):
                return
            await asyncio.sleep(0.01)
        raise AssertionError("the conversation never expired")
    else:
        now[0] += 60  # past the ttl of the SQL stores' clock


@pytest.mark.parametrize("how", ["delete", "expiry"])
async def test_a_worker_never_sends_an_erased_conversation_again(backend: Any, how: str) -> None:
    now = [1_000.0]
    options: dict[str, Any] = {}
    if how == "expiry":
        clock = time.time if backend.kind == "redis" else (lambda: now[0])
        options = {"ttl": 0.3 if backend.kind == "redis" else 30.0, "clock": clock}
    a, b = backend.make(**options), backend.make(**options)
    worker_a, worker_b = worker(), worker()
    try:
        async with pm.Session("alice", store=a):
            assert (await worker_a("my card is 4242")).content == "seen: my card is 4242"
        await erase(backend, b, how, now)
        async with pm.Session("alice", store=b):
            assert (await worker_b("hello again")).content == "seen: hello again"
        async with pm.Session("alice", store=a):
            reply = (await worker_a("what do you know?")).content
        assert reply == "seen: hello again | what do you know?"
        async with pm.Session("alice", store=b):
            reply = (await worker_b("and now?")).content
        assert reply == "seen: hello again | what do you know? | and now?"
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_turn_that_ends_after_its_conversation_was_erased_builds_on_the_new_one(
    backend: Any,
) -> None:
    a, b = backend.make(), backend.make()
    worker_b = worker()
    calls = []

    async def reply_a(history: list[Message], kwargs: dict[str, Any]) -> str:
        calls.append(history)
        if len(calls) == 2:
            # while worker A's second turn waits for the model, worker B erases the
            # conversation and starts a new one under the same id
            await b.delete("alice")
            async with pm.Session("alice", store=b):
                assert (await worker_b("new life")).content == "seen: new life"
        return seen(history, kwargs)

    worker_a = worker(ScriptedLLM(reply_a))
    try:
        async with pm.Session("alice", store=a):
            assert (await worker_a("old life")).content == "seen: old life"
        async with pm.Session("alice", store=a):
            assert (
                await worker_a("second")
            ).content == "seen: old life | second"  # read before the erase
        async with pm.Session("alice", store=a):
            reply = (await worker_a("third")).content
        # the second turn was appended to the new conversation; the old one is gone
        assert reply == "seen: new life | second | third"
    finally:
        await a.aclose()
        await b.aclose()
