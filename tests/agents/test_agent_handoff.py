"""Agents as tools: handoff of the conversation, fresh state per call, records and deps."""

from __future__ import annotations

from pydantic import BaseModel

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.dto import MessageRole
from promptimus.llms import ScriptedLLM
from promptimus.tools.run_context import RunContext
from promptimus.tools.tool import Tool

S = ScriptedLLM
QUESTION = "What is the capital of Norway, and how many people live there?"


class Deps(BaseModel):
    user: str


def population(ctx: RunContext[Deps], city: str) -> str:
    """Population of a city."""
    return f"{city}: 700k (asked by {ctx.deps.user})"


def capital(country: str) -> str:
    """Capital of a country."""
    return "Oslo"


def build(
    handoff_history: bool, include_tool_loop: bool
) -> tuple[OpenaiToolCallingAgent, ScriptedLLM, ScriptedLLM]:
    sub_llm = S([S.tool_call("population", {"city": "Oslo"}), "Oslo has about 700k people."] * 2)
    researcher = OpenaiToolCallingAgent("You research cities.", [population]).with_llm(sub_llm)
    tool = Tool.from_module(
        researcher,
        name="researcher",
        handoff_history=handoff_history,
        handoff_include_tool_loop=include_tool_loop,
    )
    parent_llm = S(
        [
            S.tool_call("capital", {"country": "Norway"}, id="cap"),
            S.tool_call("researcher", {"request": "Population of Oslo?"}, id="res"),
            "Oslo, with about 700k people.",
        ]
    )
    parent = OpenaiToolCallingAgent("You triage.", [capital, tool]).with_llm(parent_llm)
    return parent, parent_llm, sub_llm


async def test_handoff_passes_the_users_question_without_the_tool_loop() -> None:
    parent, parent_llm, sub_llm = build(handoff_history=True, include_tool_loop=False)

    output, record = await parent.run(QUESTION, deps=Deps(user="ann"))

    assert output.content == "Oslo, with about 700k people."
    sub_request = sub_llm.requests[0][0]
    assert [(m.role, m.content) for m in sub_request] == [
        ("system", "You research cities."),
        ("user", QUESTION),
        ("user", "Population of Oslo?"),
    ]
    # the parent model sees only the sub-agent's answer
    parent_third = parent_llm.requests[2][0]
    assert parent_third[-1].role == MessageRole.TOOL
    assert (parent_third[-1].tool_call_id, parent_third[-1].content) == (
        "res",
        "Oslo has about 700k people.",
    )
    # deps flow into the sub-agent's tools
    assert "asked by ann" in sub_llm.requests[1][0][-1].content
    # the child's steps stay attached to the parent's record, and count in its usage
    call = record.steps[1].tool_calls[0]
    assert call.name == "researcher" and call.child is not None
    assert len(call.child.steps) == 2
    own = sum(s.usage.total_tokens for s in record.steps)
    child = sum(s.usage.total_tokens for s in call.child.steps)
    assert child > 0 and record.usage.total_tokens == own + child


async def test_handoff_with_the_tool_loop() -> None:
    parent, _, sub_llm = build(handoff_history=True, include_tool_loop=True)
    await parent.run(QUESTION, deps=Deps(user="ann"))
    roles = [(m.role.value, m.tool_call_id) for m in sub_llm.requests[0][0]]
    assert roles == [
        ("system", None),
        ("user", None),
        ("assistant", None),  # the capital call, answered
        ("tool", "cap"),
        ("user", None),  # the request; the in-flight researcher call is not passed
    ]


async def test_without_handoff_the_sub_agent_sees_only_the_request() -> None:
    parent, _, sub_llm = build(handoff_history=False, include_tool_loop=False)
    await parent(QUESTION, deps=Deps(user="bo"))
    assert [m.content for m in sub_llm.requests[0][0]] == [
        "You research cities.",
        "Population of Oslo?",
    ]


async def test_sub_agent_starts_fresh_on_every_call() -> None:
    sub_llm = S(["first answer", "second answer"])
    sub = ToolCallingAgent([capital]).with_llm(S(["Answer: a", "Answer: b"]))
    researcher = OpenaiToolCallingAgent("You research.", []).with_llm(sub_llm)
    parent_llm = S(
        [
            S.tool_calls(("researcher", {"request": "one"}), ("react_helper", {"request": "x"})),
            S.tool_call("researcher", {"request": "two"}),
            "done",
        ]
    )
    parent = OpenaiToolCallingAgent(
        "p",
        [Tool.from_module(researcher, name="researcher"), Tool.from_module(sub, "react_helper")],
    ).with_llm(parent_llm)

    await parent("go")

    assert [m.content for m in sub_llm.requests[1][0]] == ["You research.", "two"]
    assert len(researcher.memory) == 0  # the per-call session kept the agent's own state clean
    assert parent_llm.requests[1][0][-1].content == "a"  # the ReACT sub-agent's answer text
