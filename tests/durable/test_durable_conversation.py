"""The conversation of a durable run, on real DBOS (SQLite and PostgreSQL) against the fake
OpenAI server: a run starts from an empty conversation, whichever runs the worker executed
before; a run that names a stored conversation (`store=`, `session_id=`, or the `Session` it
is started in) reads it and appends itself to it as one turn, also when another process
recovers it after a kill -9, and never twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS
from durable_crash_worker import REQUEST, WORKFLOW_ID, build_agent, respond
from durable_support import (
    ForkServer,
    configure,
    dbos_db,
    finish,
    forks,
    kill_at,
    start_worker,
    system_db,
)
from fake_llm import make_llm

import promptimus as pm
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.durable import DurableAgent
from promptimus.errors import DurableSessionError, InvalidSessionId
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import FakeOpenAIServer, Reply

__all__ = ["dbos_db", "forks", "system_db"]

ANSWER = "done: look-ok, charge-ok, note-ok"


def echo(body: dict[str, Any]) -> Reply:
    """The model answers with every user message it was sent, so a leak shows in the answer."""
    users = [m["content"] for m in body["messages"] if m["role"] == "user"]
    return Reply(content="seen: " + " | ".join(users))


def chat_agent(srv: FakeOpenAIServer) -> OpenaiToolCallingAgent:
    return OpenaiToolCallingAgent("You help customers.", [], max_steps=3).with_llm(make_llm(srv))


def users_sent(srv: FakeOpenAIServer) -> list[list[str]]:
    """The user messages of every model request, request by request."""
    return [
        [m["content"] for m in body["messages"] if m["role"] == "user"]
        for body in srv.chat.requests
    ]


async def test_two_runs_in_one_worker_each_start_from_an_empty_conversation(
    system_db: Path | str, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.chat.respond_with(echo)
    configure(system_db)
    durable = DurableAgent(chat_agent(fake_openai), name="support")
    DBOS.launch()

    first = await durable.run("ticket A: refund order 1", workflow_id="ticket-a")
    second = await durable.run("ticket B: where is order 2", workflow_id="ticket-b")
    queued = [await durable.enqueue(f"ticket Q{n}", workflow_id=f"q-{n}") for n in range(3)]
    answers = [(await durable.result(workflow_id)).output.content for workflow_id in queued]

    assert first.output.content == "seen: ticket A: refund order 1"
    assert second.output.content == "seen: ticket B: where is order 2"
    assert answers == [f"seen: ticket Q{n}" for n in range(3)]
    sent = users_sent(fake_openai)
    assert sent[:2] == [["ticket A: refund order 1"], ["ticket B: where is order 2"]]
    assert sorted(sent[2:]) == [[f"ticket Q{n}"] for n in range(3)]  # queued: in any order


async def test_runs_naming_a_stored_conversation_continue_it_one_turn_each(
    dbos_db: Path, tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.chat.respond_with(echo)
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    configure(dbos_db)
    agent = chat_agent(fake_openai)
    durable = DurableAgent(agent, name="support", store=store)
    DBOS.launch()
    try:
        await durable.run("I am Ann.", session_id="ann")
        await durable.run("I am Bob.", session_id="bob")
        workflow_id = await durable.enqueue("Who am I?", session_id="ann")
        queued = await durable.result(workflow_id)
        async with pm.Session("ann", store=store):  # started inside it: the same conversation
            inside = await durable.run("And now?")

        assert queued.output.content == "seen: I am Ann. | Who am I?"
        assert inside.output.content == "seen: I am Ann. | Who am I? | And now?"
        assert users_sent(fake_openai)[1] == ["I am Bob."]
        assert [len(await store.load_turns(name)) for name in ("ann", "bob")] == [3, 1]
        # a plain run of the agent in that conversation reads what the durable runs wrote
        async with pm.Session("ann", store=store):
            await agent.run("Plain?")
        assert users_sent(fake_openai)[-1] == ["I am Ann.", "Who am I?", "And now?", "Plain?"]
        assert list(agent.memory.data) == []  # this process's own memory gained nothing
    finally:
        await store.aclose()


async def test_a_conversation_a_run_cannot_keep_is_refused_with_a_named_error(
    dbos_db: Path, tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    other = SQLiteSessionStore(tmp_path / "other.db")
    configure(dbos_db)
    plain = DurableAgent(chat_agent(fake_openai), name="plain")
    stored = DurableAgent(chat_agent(fake_openai), name="stored", store=store)
    DBOS.launch()
    try:
        with pytest.raises(DurableSessionError, match="no store"):
            await plain.run("hi", session_id="ann")
        with pytest.raises(DurableSessionError, match="no store"):
            await plain.enqueue("hi", session_id="ann")
        with pytest.raises(InvalidSessionId):
            await stored.run("hi", session_id="a\x00b")
        async with pm.Session("ann"):  # in this process's memory only
            with pytest.raises(DurableSessionError, match="this process only"):
                await stored.run("hi")
        async with pm.Session("ann", store=other):
            with pytest.raises(DurableSessionError, match="was not given that store"):
                await stored.run("hi")
        assert fake_openai.chat.requests == []
    finally:
        await store.aclose()
        await other.aclose()


async def recover_with_store(
    db: Path, srv: FakeOpenAIServer, log: Path, sessions: Path
) -> tuple[Any, int]:
    """This process: the durable agent with the session store, DBOS launched (which recovers
    the run); the run's result and how many turns the conversation holds."""
    store = SQLiteSessionStore(sessions)
    configure(db)
    agent = build_agent(srv.base_url, log, charge_once=False)
    durable = DurableAgent(agent, name="refunds", poll_interval=0.02, store=store)
    try:
        DBOS.launch()
        result = await durable.result(WORKFLOW_ID)
        async with pm.Session("ann", store=store):
            await agent.run("What happened?")
        turns = len(await store.load_turns("ann"))
        assert list(agent.memory.data) == []
        return result, turns
    finally:
        await store.aclose()


@pytest.mark.parametrize("point", ["after:tool:2", "appended:turn"])
async def test_a_run_recovered_by_another_process_appends_its_turn_to_the_stored_conversation(
    tmp_path: Path, dbos_db: Path, fake_openai: FakeOpenAIServer, forks: ForkServer, point: str
) -> None:
    """Started inside `Session("ann", store=...)`, killed mid-run (or just after its turn was
    appended, before DBOS recorded that), recovered here: the turn is in the store, once."""
    fake_openai.chat.respond_with(respond)
    log, sessions = tmp_path / "tools.log", tmp_path / "sessions.db"
    worker, fd = start_worker(
        tmp_path,
        dbos_db,
        fake_openai.base_url,
        log,
        "--sessions",
        str(sessions),
        stop_at=point,
        forks=forks,
    )
    assert fd is not None
    kill_at(worker, fd, point)

    result, turns = await recover_with_store(dbos_db, fake_openai, log, sessions)

    assert result.output.content == ANSWER
    assert turns == 2  # the durable run's turn, then the plain run's
    last = fake_openai.chat.requests[-1]["messages"]
    assert [m["content"] for m in last if m["role"] == "user"] == [REQUEST, "What happened?"]
    assert [m.get("content") for m in last if m["role"] == "assistant"][-1] == ANSWER


async def test_an_uninterrupted_run_in_a_stored_session_writes_one_turn(
    tmp_path: Path, fake_openai: FakeOpenAIServer, forks: ForkServer
) -> None:
    fake_openai.chat.respond_with(respond)
    log, sessions = tmp_path / "tools.log", tmp_path / "sessions.db"
    worker, _ = start_worker(
        tmp_path,
        tmp_path / "runs.sqlite",
        fake_openai.base_url,
        log,
        "--sessions",
        str(sessions),
        forks=forks,
    )
    assert finish(worker) == ["status completed", f"answer {ANSWER}"]
    store = SQLiteSessionStore(sessions)
    try:
        assert len(await store.load_turns("ann")) == 1
    finally:
        await store.aclose()
