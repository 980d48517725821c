"""Agent runs nested inside agent runs are bounded: a tool that calls its own agent stops at
`max_nesting` with `AgentNestingTooDeep` after a counted number of LLM calls, and a runaway loop
over a test LLM can be cancelled."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from promptimus.agents import OpenaiToolCallingAgent, ToolCallingAgent
from promptimus.agents.nesting import DEFAULT_MAX_NESTING, agent_depth
from promptimus.dto import Message, MessageRole
from promptimus.errors import AgentNestingTooDeep, InvalidArgument
from promptimus.llms import DummyLLm, ScriptedLLM
from promptimus.tools import Tool

S = ScriptedLLM
CAP = 30.0  # a regression fails after this many seconds instead of hanging the suite


def always_call(name: str) -> ScriptedLLM:
    """A model that asks for the same tool on every call."""
    return S(lambda history, kwargs: S.tool_call(name, {}))


def self_calling_agent(**options: Any) -> tuple[OpenaiToolCallingAgent, ScriptedLLM]:
    agent: OpenaiToolCallingAgent

    async def again() -> str:
        """Ask the agent again."""
        await asyncio.sleep(0)  # keeps even a regression cancellable
        return (await agent("again")).content

    llm = always_call("again")
    agent = OpenaiToolCallingAgent("p", [again], **options).with_llm(llm)
    return agent, llm


async def test_a_tool_calling_its_own_agent_stops_at_the_default_depth() -> None:
    agent, llm = self_calling_agent()

    with pytest.raises(AgentNestingTooDeep, match="max_nesting of 8") as caught:
        await asyncio.wait_for(agent("go"), CAP)

    assert DEFAULT_MAX_NESTING == 8
    assert len(llm.requests) == 8  # one LLM call per level, then the refusal
    assert "calls its own agent" in str(caught.value)


async def test_max_nesting_is_configurable_and_stream_counts_too() -> None:
    agent, llm = self_calling_agent(max_nesting=3)

    async def drain() -> None:
        async for _ in agent.stream("go"):
            pass

    with pytest.raises(AgentNestingTooDeep, match="nested 4 deep"):
        await asyncio.wait_for(drain(), CAP)
    assert len(llm.requests) == 3


async def test_react_agent_is_bounded_the_same_way() -> None:
    agent: ToolCallingAgent

    async def again() -> str:
        """Ask the agent again."""
        return (await agent("again")).content

    llm = S(lambda history, kwargs: "Thought: t\nAction: again\nAction Input: {}")
    agent = ToolCallingAgent([again], max_nesting=2).with_llm(llm)

    with pytest.raises(AgentNestingTooDeep):
        await asyncio.wait_for(agent("go"), CAP)
    assert len(llm.requests) == 2


async def test_a_sync_tool_running_its_agent_in_its_thread_is_bounded() -> None:
    agent: OpenaiToolCallingAgent

    def again() -> str:
        """Ask the agent again, from a worker thread."""
        return asyncio.run(agent("again")).content

    llm = always_call("again")
    agent = OpenaiToolCallingAgent("p", [again], max_nesting=4).with_llm(llm)

    with pytest.raises(AgentNestingTooDeep, match="nested 5 deep"):
        await asyncio.wait_for(agent("go"), CAP)
    assert len(llm.requests) == 4


async def test_depth_is_per_run_not_shared_between_concurrent_runs() -> None:
    depths: list[int] = []

    async def probe() -> str:
        """Report the depth."""
        depths.append(agent_depth())
        return "ok"

    inner = OpenaiToolCallingAgent("inner", [probe], max_nesting=2)
    inner.with_llm(S(lambda history, kwargs: "done" if len(history) > 2 else S.tool_call("probe")))
    llm = S(
        lambda history, kwargs: (
            "done"
            if history[-1].role == MessageRole.TOOL
            else S.tool_calls(("inner_agent", {"request": "a"}), ("inner_agent", {"request": "b"}))
        )
    )
    outer = OpenaiToolCallingAgent("outer", [Tool.from_module(inner, name="inner_agent")])
    outer.max_nesting = 1
    outer.with_llm(llm)

    replies = await asyncio.wait_for(asyncio.gather(*(outer(f"q{i}") for i in range(20))), CAP)

    assert all(isinstance(r, Message) and r.content == "done" for r in replies)
    assert depths == [2] * 40  # every sub-agent's tool ran two levels deep, never more
    assert agent_depth() == 0


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "8"])
def test_max_nesting_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(InvalidArgument):
        OpenaiToolCallingAgent("p", max_nesting=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [lambda: S(lambda h, k: "again"), lambda: DummyLLm()])
async def test_a_runaway_loop_over_a_test_llm_can_be_cancelled(make: Any) -> None:
    llm = make()
    calls = 0

    async def runaway() -> None:
        nonlocal calls
        for _ in range(200_000):  # bounded, so a regression ends (and fails) instead of hanging
            await llm.achat([Message(role=MessageRole.USER, content="hi")])
            calls += 1

    with pytest.raises(TimeoutError):
        await asyncio.wait_for(runaway(), 0.05)
    assert 0 < calls < 200_000
