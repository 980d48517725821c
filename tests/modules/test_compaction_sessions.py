"""A conversation kept in a session store is compacted as one unit: each turn, whichever worker
serves it, starts from the compacted history the last one stored, and every reader sees the
same history (a marked summary turn), so no summary is written twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from long_conversation import lookup, openai_responder, turn_text

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import CompactionEvent
from promptimus.dto import MessageRole
from promptimus.llms import OpenAILike
from promptimus.modules import Compactor, Summarize
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import FakeOpenAIServer
from promptimus.transport import RetryPolicy


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(context_window=1500) as server:
        server.chat.respond_with(openai_responder)
        yield server


def worker(srv: FakeOpenAIServer) -> OpenaiToolCallingAgent:
    """A fresh agent, as another process serving the same users would build it."""
    compactor = Compactor(Summarize(), trigger_tokens=900, keep_last=1)
    llm = OpenAILike(
        "fake-model",
        api_key=srv.api_key,
        base_url=srv.base_url,
        retry=RetryPolicy(max_retries=0),
    )
    agent = OpenaiToolCallingAgent(
        "You look things up.", [lookup], memory_size=10_000, compactor=compactor
    )
    return agent.with_llm(llm)


async def test_stored_conversation_is_compacted_once_and_read_alike(
    srv: FakeOpenAIServer, tmp_path: Path
) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    compactions = 0
    for n in range(1, 13):
        async with pm.Session("ann", store=store):
            async for event in worker(srv).stream(turn_text(n)):
                compactions += isinstance(event, CompactionEvent)
    summaries = [body for body in srv.chat.requests if "tools" not in body]
    assert compactions > 0 and summaries
    assert len(summaries) <= compactions  # no turn summarized what another already had

    seen = []
    for _ in range(2):
        session = pm.Session("ann", store=store)
        await session.load()
        with session:
            seen.append(worker(srv).memory.as_list())
    assert seen[0] == seen[1]
    history = seen[0]
    assert len(history) < 12 * 5  # compacted, not the whole conversation
    marked = [m for m in history if m.summary_of is not None]
    assert len(marked) == 1 and history[0] == marked[0]
    assert "fact-1," in marked[0].content
    # what the last request carried after the system prompt is the stored history's start
    last = srv.chat.requests[-1]["messages"][1:]
    assert [m["role"] for m in last][: len(history) - 1] == [
        m.role.value for m in history[: len(history) - 1]
    ]
    assert history[-1].role == MessageRole.ASSISTANT
