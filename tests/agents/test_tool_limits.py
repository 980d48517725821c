"""Tool-call limits, through the real SDK and the fake server: `max_tool_concurrency` bounds an
agent's tool executions in flight (sync and async tools, across concurrent runs), and
`max_tool_calls_per_step` answers the calls past it with an error instead of running them.

Peaks are counted inside the tools, never timed: each call holds its place for a short sleep so
that calls overlap whenever the agent lets them."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from fake_llm import make_llm

from promptimus import Session
from promptimus.agents import OpenaiToolCallingAgent, ToolCallingAgent, ToolErrorEvent
from promptimus.agents.tool_limits import DEFAULT_MAX_TOOL_CONCURRENCY
from promptimus.errors import InvalidArgument
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools import Tool

CAP = 60.0  # a regression fails after this many seconds instead of hanging the suite
HOLD = 0.02  # seconds each call stays in flight


class InFlight:
    """Tool calls in flight right now, the most at once, and how many ran (thread-safe)."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.calls = 0
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)

    def leave(self) -> None:
        with self._lock:
            self.now -= 1


def work_tool(counter: InFlight, kind: str) -> Tool:
    if kind == "sync":

        def work(n: int) -> str:
            """Work on item n."""
            counter.enter()
            try:
                time.sleep(HOLD)
                return f"done {n}"
            finally:
                counter.leave()

        return Tool(work)

    async def awork(n: int) -> str:
        """Work on item n."""
        counter.enter()
        try:
            await asyncio.sleep(HOLD)
            return f"done {n}"
        finally:
            counter.leave()

    return Tool(awork, name="work")


def fan_out(n: int) -> Reply:
    return Reply(tool_calls=[ToolCall("work", {"n": i}, id=f"c{i}") for i in range(n)])


def tool_messages(srv: FakeOpenAIServer, request: int) -> list[tuple[str, str]]:
    messages = srv.chat.requests[request]["messages"]
    return [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_fifty_calls_in_one_reply_run_at_most_eight_at_once(
    fake_openai: FakeOpenAIServer, kind: str
) -> None:
    counter = InFlight()
    fake_openai.chat.script(fan_out(50), "all done")
    agent = OpenaiToolCallingAgent("p", [work_tool(counter, kind)], max_tool_concurrency=8)
    agent.with_llm(make_llm(fake_openai))

    output, record = await asyncio.wait_for(agent.run("go"), CAP)

    assert output.content == "all done"
    assert counter.calls == 50
    assert counter.peak == 8
    # every result goes back, in request order, whatever order they finished in
    assert tool_messages(fake_openai, 1) == [(f"c{i}", f"done {i}") for i in range(50)]
    assert [c.result for c in record.steps[0].tool_calls] == [f"done {i}" for i in range(50)]


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_without_a_bound_the_same_reply_runs_more_than_eight_at_once(
    fake_openai: FakeOpenAIServer, kind: str
) -> None:
    counter = InFlight()
    fake_openai.chat.script(fan_out(50), "all done")
    agent = OpenaiToolCallingAgent("p", [work_tool(counter, kind)], max_tool_concurrency=None)
    agent.with_llm(make_llm(fake_openai))

    await asyncio.wait_for(agent.run("go"), CAP)

    assert counter.calls == 50
    assert counter.peak > 8


def test_the_default_bound_is_eight_for_both_agents() -> None:
    assert DEFAULT_MAX_TOOL_CONCURRENCY == 8
    assert OpenaiToolCallingAgent("p").max_tool_concurrency == 8
    assert ToolCallingAgent([]).max_tool_concurrency == 8
    assert OpenaiToolCallingAgent("p").max_tool_calls_per_step is None
    assert ToolCallingAgent([]).max_tool_calls_per_step is None


def one_call_per_run(body: dict[str, Any]) -> Reply | str:
    """A model that calls `work` once per run, then answers: native calls when the request
    offers tools, the ReACT text protocol otherwise."""
    last = body["messages"][-1]
    if body.get("tools"):
        if last["role"] == "tool":
            return "fine"
        return Reply(tool_calls=[ToolCall("work", {"n": 1})])
    if last["content"].startswith("Observation:"):
        return "Thought: done\nAnswer: fine"
    return 'Thought: work\nAction: work\nAction Input: {"n": 1}'


@pytest.mark.parametrize("agent_type", ["native", "react"])
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_the_bound_is_shared_by_concurrent_runs_of_one_agent(
    fake_openai: FakeOpenAIServer, agent_type: str, kind: str
) -> None:
    counter = InFlight()
    fake_openai.chat.respond_with(one_call_per_run)
    tool = work_tool(counter, kind)
    agent: OpenaiToolCallingAgent | ToolCallingAgent
    if agent_type == "native":
        agent = OpenaiToolCallingAgent("p", [tool], max_tool_concurrency=3)
    else:
        agent = ToolCallingAgent([tool], max_tool_concurrency=3)
    agent.with_llm(make_llm(fake_openai))

    async def one_conversation() -> str:
        with Session():
            reply = await agent("go")
        return reply.content

    answers = await asyncio.wait_for(asyncio.gather(*(one_conversation() for _ in range(12))), CAP)

    assert answers == ["fine"] * 12
    assert counter.calls == 12
    assert counter.peak == 3


async def test_calls_past_the_per_step_cap_go_back_as_errors(
    fake_openai: FakeOpenAIServer,
) -> None:
    counter = InFlight()
    fake_openai.chat.script(fan_out(5), "ok")
    agent = OpenaiToolCallingAgent("p", [work_tool(counter, "async")], max_tool_calls_per_step=2)
    agent.with_llm(make_llm(fake_openai))

    events = [event async for event in agent.stream("go")]

    assert counter.calls == 2
    sent = tool_messages(fake_openai, 1)
    assert [call_id for call_id, _ in sent] == ["c0", "c1", "c2", "c3", "c4"]
    assert sent[:2] == [("c0", "done 0"), ("c1", "done 1")]
    for _, text in sent[2:]:
        assert text.startswith("Error: Not run")
        assert "at most 2 tool calls run per step" in text and "later step" in text
    record = events[-1].record  # type: ignore[union-attr]
    calls = record.steps[0].tool_calls
    assert [c.result for c in calls] == ["done 0", "done 1", None, None, None]
    assert all(c.error and "at most 2 tool calls run per step" in c.error for c in calls[2:])
    refused = [e.id for e in events if isinstance(e, ToolErrorEvent)]
    assert refused == ["c2", "c3", "c4"]


async def test_a_react_agent_takes_the_per_step_cap(fake_openai: FakeOpenAIServer) -> None:
    counter = InFlight()
    fake_openai.chat.respond_with(one_call_per_run)
    agent = ToolCallingAgent([work_tool(counter, "sync")], max_tool_calls_per_step=1)
    agent.with_llm(make_llm(fake_openai))

    reply = await asyncio.wait_for(agent("go"), CAP)

    assert reply.content == "fine" and counter.calls == 1  # one action per reply: it runs


async def test_a_tool_that_runs_its_own_agent_again_does_not_wait_for_its_own_slot(
    fake_openai: FakeOpenAIServer,
) -> None:
    """With one slot, a run nested in the agent's own tool call would wait forever for the slot
    its caller holds; it gets slots of its own instead."""

    async def dig(depth: int) -> str:
        """Dig one level deeper."""
        if depth == 0:
            return "bottom"
        with Session():
            reply = await agent(f"depth {depth - 1}")
        return f"{depth}>{reply.content}"

    def model(body: dict[str, Any]) -> Reply | str:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return last["content"]
        depth = int(last["content"].split()[-1])
        calls = [ToolCall("dig", {"depth": 0}), ToolCall("dig", {"depth": depth})]
        return Reply(tool_calls=calls)  # the answer is the last result

    fake_openai.chat.respond_with(model)
    agent = OpenaiToolCallingAgent("p", [dig], max_tool_concurrency=1, tool_timeout=CAP)
    agent.with_llm(make_llm(fake_openai))

    reply = await asyncio.wait_for(agent("depth 2"), CAP)

    assert reply.content == "2>1>bottom"


BAD_LIMITS = [0, -1, 1.5, "8", True]


@pytest.mark.parametrize("bad", BAD_LIMITS)
@pytest.mark.parametrize("name", ["max_tool_concurrency", "max_tool_calls_per_step"])
def test_limits_must_be_whole_numbers_from_one(name: str, bad: object) -> None:
    with pytest.raises(InvalidArgument, match=name):
        OpenaiToolCallingAgent("p", **{name: bad})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=name):
        ToolCallingAgent([], **{name: bad})  # type: ignore[arg-type]


def test_setting_the_bound_later_is_validated_and_applies() -> None:
    agent = OpenaiToolCallingAgent("p")
    agent.max_tool_concurrency = 2
    assert agent.max_tool_concurrency == 2
    agent.max_tool_concurrency = None
    assert agent.max_tool_concurrency is None
    with pytest.raises(InvalidArgument, match="max_tool_concurrency"):
        agent.max_tool_concurrency = 0
    assert agent.max_tool_concurrency is None  # a refused value changes nothing
    assert "max_tool_concurrency=None" in repr(agent)
