"""Compaction in a run resumed after an approval pause: the paused state knows which of its
messages are the history the run started from, so the resumed run compacts that history when
the tool results push it over the trigger (instead of sending a request the fake server's
context window refuses), and a history compacted before the pause is what the memory keeps once
the resumed run succeeds, also after the state went through JSON."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from long_conversation import lookup, openai_responder, turn_text

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.run_state import RunState
from promptimus.dto import Message, MessageRole
from promptimus.llms import OpenAILike
from promptimus.modules import Compactor, Summarize
from promptimus.testing import FakeOpenAIServer
from promptimus.tools.tool import Tool
from promptimus.transport import RetryPolicy

WINDOW = 550


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(context_window=WINDOW) as server:
        server.chat.respond_with(openai_responder)
        yield server


def history(turns: int) -> list[Message]:
    """Earlier turns without tools: each states a fact and gets a long acknowledgement."""
    return [
        message
        for n in range(1, turns + 1)
        for message in (
            Message(role=MessageRole.USER, content=f"Turn {n}: remember fact-{n}."),
            Message(role=MessageRole.ASSISTANT, content=" ".join(["noted"] * 40)),
        )
    ]


def agent(srv: FakeOpenAIServer, trigger: int) -> OpenaiToolCallingAgent:
    llm = OpenAILike(
        "fake-model", api_key=srv.api_key, base_url=srv.base_url, retry=RetryPolicy(max_retries=0)
    )
    compactor = Compactor(Summarize(), trigger_tokens=trigger, keep_last=1)
    tools = [Tool(lookup, requires_approval=True)]
    looker = OpenaiToolCallingAgent(
        "You look things up.", tools, memory_size=10_000, compactor=compactor
    )
    return looker.with_llm(llm)


def summaries(srv: FakeOpenAIServer) -> list[str]:
    return [body["messages"][-1]["content"] for body in srv.chat.requests if "tools" not in body]


async def test_a_resumed_run_compacts_the_history_its_tool_results_pushed_over(
    srv: FakeOpenAIServer,
) -> None:
    looker = agent(srv, trigger=600)
    looker.memory.extend(history(6))

    paused = await looker.run(turn_text(7))
    assert paused.status == "needs_approval" and summaries(srv) == []
    state = RunState.from_json(paused.state.to_json())
    approvals = {call.id: True for call in paused.pending}
    done = await looker.run(resume=state, approvals=approvals)

    assert done.output.content == "Done with turn 7."
    assert len(done.record.compactions) == 1
    assert [s.count("fact-") for s in summaries(srv)] == [6]
    last = srv.chat.requests[-1]["messages"]
    users = [m["content"] for m in last if m["role"] == "user"]
    assert users[0].endswith("Known facts: fact-1, fact-2, fact-3, fact-4, fact-5, fact-6")
    assert users[1:] == [turn_text(7)]
    kept = list(looker.memory.data)
    assert kept[0].summary_of == 12
    assert [m.content for m in kept[1:2]] == [turn_text(7)]
    assert kept[-1].content == "Done with turn 7."


async def test_a_history_compacted_before_the_pause_is_what_the_memory_keeps(
    srv: FakeOpenAIServer,
) -> None:
    looker = agent(srv, trigger=300)
    looker.memory.extend(history(6))

    paused = await looker.run(turn_text(7))
    assert paused.status == "needs_approval"
    assert len(paused.record.compactions) == 1
    state = RunState.from_json(paused.state.to_json())
    done = await looker.run(resume=state, approvals={c.id: True for c in paused.pending})

    assert done.output.content == "Done with turn 7."
    assert len(done.record.compactions) == 1  # the one before the pause, still counted
    kept = list(looker.memory.data)
    assert kept[0].summary_of == 12
    assert kept[1].content == turn_text(7)
    assert len(kept) == 1 + 1 + 1 + 2 + 1  # summary, request, calls, two results, answer
