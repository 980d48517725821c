"""agent.stream(): typed events, the same final messages as forward(), cancellation, HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from promptimus import Session
from promptimus.agents.base_agent import BaseAgent
from promptimus.agents.events import (
    FinalResult,
    ReasoningDelta,
    StepEnd,
    TextDelta,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.dto import Message, MessageRole, Usage
from promptimus.errors import MaxIterExceeded
from promptimus.llms import OpenAILike, ScriptedLLM
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.transport import RetryPolicy

S = ScriptedLLM


async def add(a: int, b: int) -> int:
    """Add."""
    await asyncio.sleep(0.01 * a)  # later calls may finish first
    return a + b


def explode() -> str:
    """Fails."""
    raise ValueError("boom")


class Sum(BaseModel):
    total: int


def openai_agent(**kw: Any) -> BaseAgent[Any]:
    return OpenaiToolCallingAgent("Be exact.", [add, explode], max_steps=4, **kw)


def react_agent() -> BaseAgent[Any]:
    return ToolCallingAgent([add, explode])


SCENARIOS: dict[str, tuple[Callable[[], BaseAgent[Any]], list[Any]]] = {
    "text only": (openai_agent, [Message(role="assistant", content="Hi there.", reasoning="hm")]),
    "one tool": (openai_agent, [S.tool_call("add", {"a": 1, "b": 2}), "It is 3."]),
    "parallel tools": (
        openai_agent,
        [
            S.tool_calls(("add", {"a": 3, "b": 1}), ("add", {"a": 1, "b": 1}), ("add", {"a": 2})),
            "Done.",
        ],
    ),
    "tool error": (
        openai_agent,
        [S.tool_calls(("explode", {}), ("missing", {})), S.tool_call("add", '{"a"'), "Sorry."],
    ),
    "structured output": (
        lambda: openai_agent(structural_output=Sum),
        [S.tool_call("add", {"a": 1, "b": 2}), '{"total": "x"}', '{"total": 3}'],
    ),
    "react": (
        react_agent,
        ['Thought: t\nAction: add\nAction Input: {"a": 1, "b": 1}', "oops", "Answer: 2"],
    ),
}


def dump(messages: Any) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_stream_and_forward_produce_the_same_run(name: str) -> None:
    factory, script = SCENARIOS[name]
    plain, streamed = factory(), factory()
    plain.with_llm(S(script))
    streamed.with_llm(S(script))

    result = await plain.run("question")
    events = [event async for event in streamed.stream("question")]

    final = events[-1]
    assert isinstance(final, FinalResult)
    assert final.output == result.output
    assert dump(streamed.memory.data) == dump(plain.memory.data)
    assert len(final.record.steps) == len(result.record.steps)
    for ours, theirs in zip(final.record.steps, result.record.steps, strict=True):
        assert dump(ours.request) == dump(theirs.request)
        assert ours.reply == theirs.reply
        assert [(c.name, c.result, c.error) for c in ours.tool_calls] == [
            (c.name, c.result, c.error) for c in theirs.tool_calls
        ]
    assert final.record.usage == result.record.usage


async def test_event_sequence_for_a_tool_step() -> None:
    script = [
        Message(
            role="assistant",
            content="Let me add.",
            reasoning="Use the tool twice.",
            tool_calls=[S.call("add", {"a": 3, "b": 0}, id="slow"), S.call("explode", {}, id="x")],
        ),
        "Three.",
    ]
    agent = openai_agent().with_llm(S(script))

    events = [event async for event in agent.stream("3+0?")]
    kinds = [type(e).__name__ for e in events]

    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "Use the tool twice."
    step0 = [e for e in events if not isinstance(e, FinalResult) and e.step == 0]
    assert "".join(e.text for e in step0 if isinstance(e, TextDelta)) == "Let me add."
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.id, c.name) for c in calls] == [("slow", "add"), ("x", "explode")]
    # results arrive as tools finish: the failing tool is quicker than the slow add
    outcomes = [e for e in events if isinstance(e, ToolResultEvent | ToolErrorEvent)]
    assert [type(e).__name__ for e in outcomes] == ["ToolErrorEvent", "ToolResultEvent"]
    assert outcomes[1].result == "3" and outcomes[1].duration_s >= 0.02
    assert "boom" in outcomes[0].error
    assert kinds.index("ToolCallEvent") < kinds.index("ToolErrorEvent") < kinds.index("StepEnd")
    ends = [e for e in events if isinstance(e, StepEnd)]
    assert [e.step for e in ends] == [0, 1]
    assert ends[1].total_usage == ends[0].usage + ends[1].usage
    assert kinds[-1] == "FinalResult" and events[-1].output.content == "Three."
    # the tool results still reach the model in request order
    assert [m.tool_call_id for m in agent.memory.data if m.role == MessageRole.TOOL] == [
        "slow",
        "x",
    ]


async def test_stream_errors_propagate_and_leave_memory_alone() -> None:
    agent = OpenaiToolCallingAgent("p", [add], max_steps=1)
    agent.with_llm(S([S.tool_call("add", {"a": 0, "b": 0})]))
    with pytest.raises(MaxIterExceeded):
        async for _ in agent.stream("loop"):
            pass
    assert len(agent.memory) == 0


async def test_streamed_runs_keep_state_in_the_callers_session() -> None:
    agent = OpenaiToolCallingAgent("p", []).with_llm(S(["one", "two"]))
    with Session("s"):
        events = [event async for event in agent.stream("first")]
        assert isinstance(events[-1], FinalResult)
        await agent("second")
        assert [m.content for m in agent.memory.data] == ["first", "one", "second", "two"]
    assert len(agent.memory) == 0


async def test_leaving_the_stream_early_cancels_the_run() -> None:
    gate = asyncio.Event()
    cancelled = asyncio.Event()

    async def wait_forever() -> str:
        """Waits."""
        try:
            await gate.wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    agent = OpenaiToolCallingAgent("p", [wait_forever]).with_llm(
        S([S.tool_call("wait_forever", {}), "unreachable"])
    )
    stream = agent.stream("go")
    async for event in stream:
        if isinstance(event, ToolCallEvent):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.wait_for(cancelled.wait(), 10)  # generous: a regression fails, never hangs
    assert len(agent.memory) == 0


async def test_streaming_over_http_with_the_real_sdk() -> None:
    with FakeOpenAIServer() as srv:
        srv.chat.script(
            Reply(
                content="Checking.",
                tool_calls=[ToolCall("add", {"a": 2, "b": 2}, id="call_1")],
                usage={"prompt_tokens": 10, "completion_tokens": 5},
            ),
            Reply(content="The sum is four.", usage={"prompt_tokens": 20, "completion_tokens": 4}),
        )
        llm = OpenAILike(
            "fake-model",
            api_key=srv.api_key,
            base_url=srv.base_url,
            retry=RetryPolicy(max_retries=1, base_delay=0.001),
            timeout=5.0,
        )
        agent = OpenaiToolCallingAgent("p", [add]).with_llm(llm)
        events = [event async for event in agent.stream("2+2?")]
        requests = list(srv.chat.requests)

    text = "".join(e.text for e in events if isinstance(e, TextDelta) and e.step == 1)
    assert text == "The sum is four."
    assert any(isinstance(e, ToolResultEvent) and e.result == "4" for e in events)
    final = events[-1]
    assert isinstance(final, FinalResult) and final.output.content == "The sum is four."
    assert all(r.get("stream") is True for r in requests)
    assert requests[1]["messages"][-1] == {"role": "tool", "content": "4", "tool_call_id": "call_1"}
    assert final.record.usage.prompt_tokens == 30
    assert final.record.usage.completion_tokens == 9
    assert isinstance(final.record.usage, Usage)


async def test_streamed_runs_pass_through_forward_hooks_and_interceptors() -> None:
    from promptimus.core import register_module_call_interceptor

    agent = openai_agent().with_llm(S([S.tool_call("add", {"a": 1, "b": 2}), "It is 3."]))
    seen: list[str] = []

    def pre(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        seen.append(f"pre:{args[0]}")
        return ("What is 1 + 2?", *args[1:]), kwargs  # a pre-hook may rewrite the request

    def post(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> Any:
        seen.append(f"post:{output.content}")
        return output.model_copy(update={"content": output.content + " (checked)"})

    async def intercept(module: Any, call: Any, args: Any, kwargs: Any) -> Any:
        seen.append(f"intercept:{type(module).__name__}")
        return await call(args, kwargs)

    with (
        agent.register_forward_pre_hook(pre),
        agent.register_forward_hook(post),
        register_module_call_interceptor(intercept),
    ):
        events = [event async for event in agent.stream("ignored")]

    final = events[-1]
    assert isinstance(final, FinalResult)
    assert final.output.content == "It is 3. (checked)"
    assert final.record.steps[0].request[-1].content == "What is 1 + 2?"
    assert seen[:2] == ["intercept:OpenaiToolCallingAgent", "pre:ignored"]
    assert seen[-1] == "post:It is 3."
    assert sum(isinstance(event, FinalResult) for event in events) == 1


@pytest.mark.parametrize("streamed", [False, True])
async def test_prompt_demos_are_sent_and_recorded_on_both_paths(streamed: bool) -> None:
    # FewShot trains `demos` on the agent's Prompt: each step sends them after the system text,
    # streamed or not, and the run record shows exactly that.
    from promptimus import Parameter

    with FakeOpenAIServer() as server:
        server.chat.script(Reply("Paris."))
        agent = OpenaiToolCallingAgent("Answer briefly.", [add])
        agent.predictor.prompt.demos = Parameter([["Capital of Italy?", "Rome."]])
        agent.with_llm(OpenAILike("m", api_key=server.api_key, base_url=server.base_url))
        with Session():
            if streamed:
                events = [event async for event in agent.stream("Capital of France?")]
                record = events[-1].record
            else:
                record = (await agent.run("Capital of France?")).record

    expected = [
        ("system", "Answer briefly."),
        ("user", "Capital of Italy?"),
        ("assistant", "Rome."),
        ("user", "Capital of France?"),
    ]
    (request,) = server.chat.requests
    assert [(m["role"], m["content"]) for m in request["messages"]] == expected
    assert [(m.role.value, m.content) for m in record.steps[0].request] == expected
