"""What a stream shows while tools run: a tool's `ctx.progress(...)` as `ToolProgress`, and an
agent used as a tool streaming its own events as `SubAgentEvent`s with its path."""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import pytest

from promptimus.agents import OpenaiToolCallingAgent, ToolCallingAgent
from promptimus.agents.events import (
    AgentEvent,
    FinalResult,
    NeedsApproval,
    SubAgentEvent,
    TextDelta,
    ToolCallEvent,
    ToolProgress,
    ToolResultEvent,
)
from promptimus.errors import InvalidArgument
from promptimus.llms import ScriptedLLM
from promptimus.tools import RunContext, Tool
from promptimus.tools.run_context import current_tool_call

S = ScriptedLLM


async def collect(agent: Any, request: str) -> list[AgentEvent]:
    return [event async for event in agent.stream(request)]


async def crawl(ctx: RunContext[Any], pages: int) -> str:
    """Reads some pages."""
    for page in range(pages):
        ctx.progress(f"page {page + 1} of {pages}", fraction=(page + 1) / pages)
        await asyncio.sleep(0)
    ctx.progress("done")
    return f"read {pages}"


def sync_crawl(ctx: RunContext[Any], pages: int) -> str:
    """Reads some pages, blocking (it runs in a thread of its own)."""
    for page in range(pages):
        ctx.progress(f"page {page + 1}", fraction=(page + 1) / pages)
        time.sleep(0.001)
    return f"read {pages}"


@pytest.mark.parametrize("fn", [crawl, sync_crawl], ids=["async", "thread"])
async def test_progress_reaches_the_stream_between_the_call_and_its_result(fn: Any) -> None:
    llm = S([S.tool_call(fn.__name__, {"pages": 3}, id="c1"), "Done."])
    agent = OpenaiToolCallingAgent("p", [fn]).with_llm(llm)
    events = await collect(agent, "crawl")
    kinds = [type(e).__name__ for e in events]
    progress = [e for e in events if isinstance(e, ToolProgress)]
    assert [p.fraction for p in progress][:3] == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert all(p.id == "c1" and p.name == fn.__name__ and p.step == 0 for p in progress)
    assert progress[0].message.startswith("page 1")
    first, last = kinds.index("ToolProgress"), len(kinds) - 1 - kinds[::-1].index("ToolProgress")
    assert kinds.index("ToolCallEvent") < first
    assert last < kinds.index("ToolResultEvent")
    assert isinstance(events[-1], FinalResult) and str(events[-1].output) == "Done."


async def test_progress_without_a_stream_changes_nothing() -> None:
    llm = S([S.tool_call("crawl", {"pages": 2}), "Done."])
    agent = OpenaiToolCallingAgent("p", [crawl]).with_llm(llm)
    assert str(await agent("crawl")) == "Done."


async def test_progress_outside_an_agent_run_does_nothing() -> None:
    assert await Tool(crawl).call({"pages": 2}) == "read 2"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -0.1, 1.5, True, "half"])
async def test_a_bad_fraction_is_a_named_error(bad: Any) -> None:
    with pytest.raises(InvalidArgument, match="fraction"):
        RunContext().progress("x", fraction=bad)


async def test_a_message_that_is_not_text_is_a_named_error() -> None:
    with pytest.raises(InvalidArgument, match="text"):
        RunContext().progress(42)  # type: ignore[arg-type]


def researcher(llm: ScriptedLLM) -> OpenaiToolCallingAgent:
    inner = OpenaiToolCallingAgent("You research.", [crawl]).with_llm(llm)
    return inner


async def test_a_nested_agent_streams_through_its_parent_with_its_path() -> None:
    inner_llm = S([S.tool_call("crawl", {"pages": 1}, id="in1"), "Paris is large."])
    outer_llm = S([S.tool_call("researcher", {"request": "Paris?"}, id="out1"), "It is large."])

    class Desk(OpenaiToolCallingAgent):
        pass

    inner = researcher(inner_llm)
    outer = Desk("You answer.", [Tool.from_module(inner, name="researcher")]).with_llm(outer_llm)
    events = await collect(outer, "Tell me about Paris")
    nested = [e for e in events if isinstance(e, SubAgentEvent)]
    assert nested, [type(e).__name__ for e in events]
    assert {e.tool_call_id for e in nested} == {"out1"}
    assert {e.step for e in nested} == {0}
    assert {e.path for e in nested} == {inner.path}
    inner_kinds = [type(e.event).__name__ for e in nested]
    assert "ToolCallEvent" in inner_kinds and "ToolProgress" in inner_kinds
    assert "FinalResult" not in inner_kinds and "NeedsApproval" not in inner_kinds
    inner_text = "".join(e.event.text for e in nested if isinstance(e.event, TextDelta))
    assert inner_text == "Paris is large."
    # the nested events come while the outer tool call runs: after its call, before its result
    kinds = [type(e).__name__ for e in events]
    first_nested = kinds.index("SubAgentEvent")
    assert kinds.index("ToolCallEvent") < first_nested
    assert kinds.index("ToolResultEvent") > len(kinds) - 1 - kinds[::-1].index("SubAgentEvent")
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    assert result.result == "Paris is large."
    assert isinstance(events[-1], FinalResult) and str(events[-1].output) == "It is large."
    # the outer run's own text is not mixed with the inner's
    outer_text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert outer_text == "It is large."


async def test_nesting_two_deep_wraps_twice() -> None:
    leaf = OpenaiToolCallingAgent("leaf", [crawl]).with_llm(
        S([S.tool_call("crawl", {"pages": 1}, id="l1"), "leaf says hi"])
    )
    middle = OpenaiToolCallingAgent("middle", [Tool.from_module(leaf, name="leaf")]).with_llm(
        S([S.tool_call("leaf", {"request": "go"}, id="m1"), "middle done"])
    )
    top = OpenaiToolCallingAgent("top", [Tool.from_module(middle, name="middle")]).with_llm(
        S([S.tool_call("middle", {"request": "go"}, id="t1"), "top done"])
    )
    events = await collect(top, "go")
    deep = [
        e.event
        for e in events
        if isinstance(e, SubAgentEvent) and isinstance(e.event, SubAgentEvent)
    ]
    assert deep and {d.path for d in deep} == {leaf.path}
    assert {d.tool_call_id for d in deep} == {"m1"}
    assert any(isinstance(d.event, ToolProgress) for d in deep)
    assert isinstance(events[-1], FinalResult) and str(events[-1].output) == "top done"


async def test_a_nested_agent_without_a_streamed_parent_does_not_stream() -> None:
    inner_llm = S(["inner answer"])
    inner = OpenaiToolCallingAgent("inner", []).with_llm(inner_llm)
    outer = OpenaiToolCallingAgent("outer", [Tool.from_module(inner, name="inner")]).with_llm(
        S([S.tool_call("inner", {"request": "x"}), "outer answer"])
    )
    assert str(await outer("go")) == "outer answer"
    assert len(inner_llm.calls) == 1


async def test_a_function_tool_awaiting_an_agent_streams_it_too() -> None:
    inner = ToolCallingAgent([]).with_llm(S(["Final Answer: forty-two"]))

    async def ask(question: str) -> str:
        """Ask the oracle."""
        assert current_tool_call() is not None
        return str(await inner(question))

    outer = OpenaiToolCallingAgent("outer", [ask]).with_llm(
        S([S.tool_call("ask", {"question": "meaning?"}, id="a1"), "It is 42."])
    )
    events = await collect(outer, "go")
    nested = [e for e in events if isinstance(e, SubAgentEvent)]
    assert nested and all(e.tool_call_id == "a1" for e in nested)
    assert not any(isinstance(e.event, FinalResult | NeedsApproval) for e in nested)
    assert current_tool_call() is None  # nothing leaks out of the run


async def test_concurrent_streams_keep_their_nested_events_apart() -> None:
    def make(tag: str) -> OpenaiToolCallingAgent:
        inner = OpenaiToolCallingAgent("inner", [crawl]).with_llm(
            S([S.tool_call("crawl", {"pages": 2}), f"inner {tag}"])
        )
        return OpenaiToolCallingAgent("outer", [Tool.from_module(inner, name="inner")]).with_llm(
            S([S.tool_call("inner", {"request": tag}, id=f"call-{tag}"), f"outer {tag}"])
        )

    runs = await asyncio.gather(*(collect(make(tag), tag) for tag in "abcdef"))
    for tag, events in zip("abcdef", runs, strict=True):
        nested = [e for e in events if isinstance(e, SubAgentEvent)]
        assert nested and {e.tool_call_id for e in nested} == {f"call-{tag}"}
        text = "".join(e.event.text for e in nested if isinstance(e.event, TextDelta))
        assert text == f"inner {tag}"
        calls = [e for e in events if isinstance(e, ToolCallEvent)]
        assert [c.id for c in calls] == [f"call-{tag}"]
