"""Run records and the context-variable plumbing that attaches a sub-agent's record to its
parent's tool call (the agents use it; these tests drive it the way an agent does)."""

from __future__ import annotations

import asyncio

from promptimus.agents.run_record import (
    RunRecord,
    StepRecord,
    ToolCallRecord,
    capture_records,
    current_record,
    recording,
)
from promptimus.core import Module
from promptimus.dto import Message, MessageRole, Usage
from promptimus.tools.run_context import RunContext
from promptimus.tools.tool import Tool


def step(index: int, tokens: int, calls: list[ToolCallRecord] | None = None) -> StepRecord:
    return StepRecord(
        index=index,
        request=[Message(role=MessageRole.USER, content="q")],
        reply=Message(role=MessageRole.ASSISTANT, content="a"),
        tool_calls=calls or [],
        usage=Usage(prompt_tokens=tokens, completion_tokens=1, total_tokens=tokens + 1),
    )


class FakeAgent(Module):
    """Behaves like an agent with respect to records: one step per call, recorded."""

    def __init__(self, tokens: int) -> None:
        super().__init__()
        self._tokens = tokens

    async def forward(self, request: str | list[Message]) -> str:
        record = RunRecord()
        with recording(record):
            assert current_record() is record
            record.steps.append(step(0, self._tokens))
            record.output = f"answer to {request!r}"
        return record.output


def test_usage_sums_steps_and_children() -> None:
    child = RunRecord(steps=[step(0, 100)])
    call = ToolCallRecord(id="c1", name="sub", arguments="{}", result="r", children=[child])
    parent = RunRecord(steps=[step(0, 10, [call]), step(1, 20)], output="done")
    assert parent.usage == Usage(prompt_tokens=130, completion_tokens=3, total_tokens=133)
    assert parent.tool_calls == [call]


def test_current_record_is_scoped() -> None:
    outer, inner = RunRecord(), RunRecord()
    assert current_record() is None
    with recording(outer):
        with recording(inner):
            assert current_record() is inner
        assert current_record() is outer
    assert current_record() is None


async def test_sub_agent_record_is_captured_around_a_tool_call() -> None:
    tool = Tool.from_module(FakeAgent(tokens=50))
    parent = RunRecord()
    with recording(parent):
        with capture_records() as children:
            result = await tool.call({"request": "sub-question"}, RunContext(record=parent))
        call = ToolCallRecord(
            id="c1", name=tool.name, arguments="{}", result=result, children=children
        )
        parent.steps.append(step(0, 5, [call]))
    assert result == "answer to 'sub-question'"
    assert call.child is not None and call.child.output == result
    assert parent.usage.prompt_tokens == 55


async def test_grandchildren_attach_to_the_child_not_the_outer_capture() -> None:
    inner = Tool.from_module(FakeAgent(tokens=1), name="inner")

    class Middle(Module):
        async def forward(self, request: str) -> str:
            record = RunRecord()
            with recording(record):
                with capture_records() as grandchildren:
                    await inner.call({"request": request})
                record.steps.append(
                    step(0, 0, [ToolCallRecord("g", "inner", "{}", children=grandchildren)])
                )
            return "middle"

    with capture_records() as runs:
        await Tool.from_module(Middle()).call({"request": "x"})
    assert len(runs) == 1
    assert runs[0].tool_calls[0].child is not None
    assert runs[0].usage.prompt_tokens == 1


async def test_concurrent_tool_calls_capture_their_own_children() -> None:
    slow = Tool.from_module(FakeAgent(tokens=7), name="slow")

    async def one(text: str) -> tuple[str, RunRecord]:
        with capture_records() as runs:
            await asyncio.sleep(0)
            await slow.call({"request": text})
        assert len(runs) == 1
        return text, runs[0]

    results = await asyncio.gather(one("a"), one("b"), one("c"))
    assert [record.output for _, record in results] == [
        "answer to 'a'",
        "answer to 'b'",
        "answer to 'c'",
    ]


def test_run_context_for_tool_call_shares_run_state() -> None:
    messages = [Message(role=MessageRole.USER, content="hi")]
    ctx = RunContext(deps={"k": 1}, messages=messages, step=3)
    per_call = ctx.for_tool_call("call_9")
    assert per_call.tool_call_id == "call_9" and ctx.tool_call_id is None
    assert per_call.deps is ctx.deps and per_call.messages is messages and per_call.step == 3
    assert "deps=dict" in repr(ctx)  # the repr never prints the deps themselves (may be secrets)
    assert "{'k': 1}" not in repr(ctx)
