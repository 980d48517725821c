"""A durable run's compaction is a step: the compacted conversation is recorded, so a run that
a crash interrupted goes on from it without asking for its summary again, and the commit puts
the compacted history in the stored conversation with the run's turn, so the next run starts
from it. On real DBOS (SQLite) against the fake OpenAI server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS
from durable_crash_worker import REQUEST, SUMMARY, WORKFLOW_ID, build_agent, respond
from durable_support import ForkServer, configure, dbos_db, forks, kill_at, start_worker

import promptimus as pm
from promptimus.dto import Message, MessageRole
from promptimus.durable import DurableAgent
from promptimus.modules.compaction import SUMMARY_HEADER
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import FakeOpenAIServer

__all__ = ["dbos_db", "forks"]

ANSWER = "done: look-ok, charge-ok, note-ok"
EARLIER = [
    Message(role=role, content=f"{'order' if role == MessageRole.USER else 'noted'} {n}")
    for n in range(1, 5)
    for role in (MessageRole.USER, MessageRole.ASSISTANT)
]


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_openai.chat.respond_with(respond)
    return fake_openai


def summary_requests(srv: FakeOpenAIServer) -> int:
    return sum("tools" not in body for body in srv.chat.requests)


async def seed(sessions: Path, log: Path, base_url: str) -> None:
    """Four earlier turns in the stored conversation "ann"."""
    store = SQLiteSessionStore(sessions)
    agent = build_agent(base_url, log, charge_once=False, compact=True)
    try:
        async with pm.Session("ann", store=store) as session, session.turn():
            agent.memory.extend(EARLIER)
    finally:
        await store.aclose()


async def stored(store: SQLiteSessionStore, agent: Any) -> list[Message]:
    async with pm.Session("ann", store=store) as session:
        await session.load()
        return list(agent.memory.data)


def assert_compacted(history: list[Message]) -> None:
    """The stored conversation: the summary of the four earlier turns, then the run's turn."""
    first = history[0]
    assert first.summary_of == len(EARLIER)
    assert first.content == SUMMARY_HEADER + SUMMARY
    assert history[1].content == REQUEST
    assert history[-1].content == ANSWER
    assert not any(m.content in {e.content for e in EARLIER} for m in history)


async def test_a_compaction_is_a_recorded_step_and_the_store_keeps_its_result(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer
) -> None:
    log, sessions = tmp_path / "tools.log", tmp_path / "sessions.db"
    await seed(sessions, log, srv.base_url)
    store = SQLiteSessionStore(sessions)
    configure(dbos_db)
    agent = build_agent(srv.base_url, log, charge_once=False, compact=True)
    durable = DurableAgent(agent, name="refunds", poll_interval=0.02, store=store)
    DBOS.launch()
    try:
        result = await durable.run(REQUEST, workflow_id=WORKFLOW_ID, session_id="ann")

        assert result.output.content == ANSWER
        assert summary_requests(srv) == 1
        assert len(result.record.compactions) == 1
        assert result.record.compactions[0].steps == ("summarize",)
        steps = await DBOS.list_workflow_steps_async(WORKFLOW_ID)
        names = [step["function_name"] for step in steps]
        assert names[:3] == ["promptimus.history", "promptimus.compaction", "promptimus.model"]
        first = next(m for m in srv.chat.requests if "tools" in m)["messages"]
        assert [m["content"] for m in first if m["role"] == "user"] == [
            SUMMARY_HEADER + SUMMARY,
            REQUEST,
        ]
        assert_compacted(await stored(store, agent))

        # the next run starts from the compacted history: its summary request carries the
        # stored summary and the last run, not the earlier turns
        again = await durable.run(REQUEST, workflow_id="ticket-43", session_id="ann")
        assert again.output.content == ANSWER
        assert summary_requests(srv) == 2
        transcript = [b for b in srv.chat.requests if "tools" not in b][1]["messages"][-1]
        assert transcript["content"].startswith(f"Transcript:\n\nearlier summary: {SUMMARY}")
        assert "order 1" not in transcript["content"]
    finally:
        await store.aclose()


@pytest.mark.parametrize("point", ["after:compact:1", "after:model:1", "after:tool:2"])
async def test_a_run_killed_after_its_compaction_does_not_summarize_again(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer, forks: ForkServer, point: str
) -> None:
    log, sessions = tmp_path / "tools.log", tmp_path / "sessions.db"
    await seed(sessions, log, srv.base_url)
    worker, fd = start_worker(
        tmp_path,
        dbos_db,
        srv.base_url,
        log,
        "--sessions",
        str(sessions),
        "--compact",
        stop_at=point,
        forks=forks,
    )
    assert fd is not None
    kill_at(worker, fd, point)
    assert summary_requests(srv) == 1

    store = SQLiteSessionStore(sessions)
    configure(dbos_db)
    agent = build_agent(srv.base_url, log, charge_once=False, compact=True)
    durable = DurableAgent(agent, name="refunds", poll_interval=0.02, store=store)
    try:
        DBOS.launch()  # recovers the run in this process
        result = await durable.result(WORKFLOW_ID)

        assert result.output.content == ANSWER
        assert summary_requests(srv) == 1
        assert log.read_text().split() == ["look", "charge", "note"]
        history = await stored(store, agent)
        assert_compacted(history)
        assert len(await store.load_turns("ann")) == 2  # the seed, then the run's one turn
    finally:
        await store.aclose()


async def test_a_durable_run_paused_for_approval_keeps_its_compaction_once_approved(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer
) -> None:
    log, sessions = tmp_path / "tools.log", tmp_path / "sessions.db"
    await seed(sessions, log, srv.base_url)
    store = SQLiteSessionStore(sessions)
    configure(dbos_db)
    agent = build_agent(srv.base_url, log, charge_once=False, approve_charge=True, compact=True)
    durable = DurableAgent(agent, name="refunds", poll_interval=0.02, store=store)
    DBOS.launch()
    try:
        paused = await durable.run(REQUEST, workflow_id=WORKFLOW_ID, session_id="ann")
        assert paused.status == "needs_approval"
        assert summary_requests(srv) == 1
        await durable.approve(WORKFLOW_ID, paused.pending[0].id, True)
        result = await durable.result(WORKFLOW_ID)

        assert result.output.content == ANSWER
        assert summary_requests(srv) == 1  # the resumed run goes on from the same summary
        assert len(result.record.compactions) == 1
        assert_compacted(await stored(store, agent))
    finally:
        await store.aclose()
