"""Per-step hooks (`agent.register_step_hook`): what each step sends, checked in the requests the
fake OpenAI server saw, for the native and the ReACT agent, through forward, run and stream."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from fake_llm import make_llm

from promptimus.agents import StepContext, StepUpdate
from promptimus.agents.events import FinalResult
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.dto import Message
from promptimus.errors import InvalidArgument
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools.run_context import RunContext

BOUND = 30.0


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


class Calls:
    def __init__(self) -> None:
        self.names: list[str] = []

    def tools(self) -> list[Any]:
        def search(query: str) -> str:
            """Search the web."""
            self.names.append("search")
            return f"found {query}"

        def add(a: int, b: int) -> int:
            """Add two integers."""
            self.names.append("add")
            return a + b

        return [search, add]


def offered(request: dict[str, Any]) -> list[str] | None:
    tools = request.get("tools")
    return None if tools is None else [t["function"]["name"] for t in tools]


def contents(request: dict[str, Any]) -> list[str]:
    return [m.get("content") or "" for m in request["messages"]]


def two_tool_steps(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        Reply(tool_calls=[ToolCall("search", {"query": "x"}, id="c1")]),
        Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 2}, id="c2")]),
        "done",
    )


async def test_a_hook_narrows_the_tools_offered_at_each_step(srv: FakeOpenAIServer) -> None:
    two_tool_steps(srv)
    calls = Calls()
    agent = OpenaiToolCallingAgent("p", calls.tools()).with_llm(make_llm(srv))
    plan = {0: ["search"], 1: ["add"]}
    agent.register_step_hook(lambda ctx: StepUpdate(active_tools=plan.get(ctx.step, [])))

    output, record = await asyncio.wait_for(agent.run("go"), BOUND)

    assert output.content == "done"
    assert [offered(r) for r in srv.chat.requests] == [["search"], ["add"], None]
    assert [s.tools for s in record.steps] == [["search"], ["add"], []]
    assert calls.names == ["search", "add"]
    assert record.to_dict()["steps"][0]["tools"] == ["search"]


async def test_a_call_to_a_tool_not_offered_goes_back_as_an_error(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Reply(tool_calls=[ToolCall("add", {"a": 1, "b": 2}, id="c1")]), "ok")
    calls = Calls()
    agent = OpenaiToolCallingAgent("p", calls.tools()).with_llm(make_llm(srv))
    agent.register_step_hook(lambda ctx: StepUpdate(active_tools=["search"]))

    await asyncio.wait_for(agent("go"), BOUND)

    assert calls.names == []
    tool_message = srv.chat.requests[1]["messages"][-1]
    assert tool_message["tool_call_id"] == "c1"
    assert "not available at this step" in tool_message["content"]
    assert "search" in tool_message["content"]


async def test_a_sliding_window_sends_the_last_messages_and_keeps_the_memory(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("a1", "a2", "a3")
    agent = OpenaiToolCallingAgent("sys", []).with_llm(make_llm(srv))
    seen: list[int] = []

    def window(ctx: StepContext[Any]) -> StepUpdate:
        seen.append(len(ctx.messages))
        return StepUpdate(messages=ctx.messages[-3:])

    agent.register_step_hook(window)
    for text in ("q1", "q2", "q3"):
        await asyncio.wait_for(agent(text), BOUND)

    assert [contents(r) for r in srv.chat.requests] == [
        ["sys", "q1"],
        ["sys", "q1", "a1", "q2"],
        ["sys", "q2", "a2", "q3"],
    ]
    assert seen == [1, 3, 5]  # the hook always sees the whole conversation: nothing persisted
    assert [m.content for m in agent.memory.data] == ["q1", "a1", "q2", "a2", "q3", "a3"]


async def test_a_window_given_as_a_generator_sends_every_message_it_yields(
    srv: FakeOpenAIServer,
) -> None:
    # `messages=(m for m in ...)` is ordinary Python; checking the items must not use them up
    # and send the model a request without the conversation.
    srv.chat.script("a1")
    agent = OpenaiToolCallingAgent("sys", []).with_llm(make_llm(srv))
    agent.register_step_hook(lambda ctx: StepUpdate(messages=(m for m in ctx.messages)))

    await asyncio.wait_for(agent("q1"), BOUND)

    assert [contents(r) for r in srv.chat.requests] == [["sys", "q1"]]


async def test_a_hook_that_edits_messages_in_place_changes_only_what_this_step_sends(
    srv: FakeOpenAIServer,
) -> None:
    # Trimming long tool results for one step by editing the messages the hook was given is
    # the obvious way to write it: the run's conversation and the memory must keep the full text.
    srv.chat.script(Reply(tool_calls=[ToolCall("search", {"query": "x" * 50}, id="c1")]), "ok")
    agent = OpenaiToolCallingAgent("p", Calls().tools()).with_llm(make_llm(srv))

    def trim(ctx: StepContext[Any]) -> StepUpdate:
        for message in ctx.messages:
            message.content = message.content[:8]
        return StepUpdate(messages=ctx.messages)

    agent.register_step_hook(trim)
    await asyncio.wait_for(agent("please search for a long word"), BOUND)

    assert contents(srv.chat.requests[1])[1:] == ["please s", "", "found xx"]  # trimmed, sent
    remembered = [m.content for m in agent.memory.data]
    assert remembered[0] == "please search for a long word"
    assert remembered[2] == "found " + "x" * 50
    assert remembered[3] == "ok"


async def test_system_and_variables_apply_to_one_step_only(srv: FakeOpenAIServer) -> None:
    two_tool_steps(srv)
    agent = OpenaiToolCallingAgent("Answer in {lang}.", Calls().tools()).with_llm(make_llm(srv))

    def steer(ctx: StepContext[Any]) -> StepUpdate | None:
        if ctx.step == 0:
            return StepUpdate(variables={"lang": "German"})
        if ctx.step == 1:
            return StepUpdate(system=f"Replaced; was: {ctx.system}")
        return None

    agent.register_step_hook(steer)
    _, record = await asyncio.wait_for(agent.run("go", lang="French"), BOUND)

    systems = [r["messages"][0]["content"] for r in srv.chat.requests]
    assert systems == ["Answer in German.", "Replaced; was: Answer in French.", "Answer in French."]
    assert [s.request[0].content for s in record.steps] == systems


async def test_async_hooks_run_in_order_and_later_ones_override(srv: FakeOpenAIServer) -> None:
    srv.chat.script("ok")
    agent = OpenaiToolCallingAgent("{a} {b}", Calls().tools()).with_llm(make_llm(srv))
    order: list[str] = []

    async def first(ctx: StepContext[Any]) -> StepUpdate:
        await asyncio.sleep(0)
        order.append("first")
        return StepUpdate(active_tools=["add"], variables={"a": "A1", "b": "B1"})

    def second(ctx: StepContext[Any]) -> StepUpdate:
        order.append(f"second saw {ctx.tool_names}")
        return StepUpdate(active_tools=["search"], variables={"b": "B2"})

    agent.register_step_hook(first)
    agent.register_step_hook(second)
    await asyncio.wait_for(agent("go", a="a", b="b"), BOUND)

    assert order == ["first", "second saw ['add']"]
    request = srv.chat.requests[0]
    assert offered(request) == ["search"]
    assert request["messages"][0]["content"] == "A1 B2"


async def test_an_unknown_tool_name_warns_once_per_hook_and_name(srv: FakeOpenAIServer) -> None:
    two_tool_steps(srv)
    agent = OpenaiToolCallingAgent("p", Calls().tools()).with_llm(make_llm(srv))
    agent.register_step_hook(lambda ctx: StepUpdate(active_tools=["search", "add", "nope"]))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await asyncio.wait_for(agent("go"), BOUND)
        srv.chat.script("again")
        await asyncio.wait_for(agent("go"), BOUND)

    messages = [str(w.message) for w in caught if "nope" in str(w.message)]
    assert len(messages) == 1 and "no tool by that name" in messages[0]
    assert [offered(r) for r in srv.chat.requests] == [["search", "add"]] * 4


async def test_removed_hooks_stop_and_no_hook_leaves_requests_alone(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("one", "two")
    agent = OpenaiToolCallingAgent("p", Calls().tools()).with_llm(make_llm(srv))
    handle = agent.register_step_hook(lambda ctx: StepUpdate(active_tools=[]))

    _, first = await asyncio.wait_for(agent.run("go"), BOUND)
    handle.remove()
    _, second = await asyncio.wait_for(agent.run("go"), BOUND)

    assert [offered(r) for r in srv.chat.requests] == [None, ["search", "add"]]
    assert first.steps[0].tools == [] and second.steps[0].tools is None
    assert "tools" not in second.to_dict()["steps"][0]


async def test_hooks_apply_to_streamed_runs(srv: FakeOpenAIServer) -> None:
    two_tool_steps(srv)
    agent = OpenaiToolCallingAgent("p", Calls().tools()).with_llm(make_llm(srv))
    agent.register_step_hook(
        lambda ctx: StepUpdate(active_tools=["search"] if ctx.step == 0 else ["add"])
    )

    async def drain() -> list[Any]:
        return [event async for event in agent.stream("go")]

    events = await asyncio.wait_for(drain(), BOUND)

    assert isinstance(events[-1], FinalResult)
    assert [offered(r) for r in srv.chat.requests] == [["search"], ["add"], ["add"]]
    assert all(r.get("stream") for r in srv.chat.requests)


async def test_the_hook_gets_deps_usage_and_a_copy_of_the_messages(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Reply(tool_calls=[ToolCall("search", {"query": "x"}, id="c1")]), "ok")
    agent = OpenaiToolCallingAgent("p", Calls().tools()).with_llm(make_llm(srv))
    seen: list[tuple[Any, int, int]] = []

    def spy(ctx: StepContext[Any]) -> None:
        seen.append((ctx.deps, ctx.usage.total_tokens, len(ctx.messages)))
        ctx.messages.clear()  # a copy: the run does not lose its conversation

    agent.register_step_hook(spy)
    await asyncio.wait_for(agent("go", deps="the deps"), BOUND)

    assert [s[0] for s in seen] == ["the deps", "the deps"]
    assert seen[0][1] == 0 and seen[1][1] > 0
    assert [s[2] for s in seen] == [1, 3]
    assert contents(srv.chat.requests[1])[1] == "go"


async def test_a_hook_returning_something_else_is_a_named_error(srv: FakeOpenAIServer) -> None:
    agent = OpenaiToolCallingAgent("p", Calls().tools()).with_llm(make_llm(srv))
    agent.register_step_hook(lambda ctx: ["search"])
    with pytest.raises(InvalidArgument, match="return a StepUpdate"):
        await asyncio.wait_for(agent("go"), BOUND)
    agent2 = OpenaiToolCallingAgent("p", Calls().tools()).with_llm(make_llm(srv))
    agent2.register_step_hook(lambda ctx: StepUpdate(active_tools="search"))
    with pytest.raises(InvalidArgument, match="list of tool names"):
        await asyncio.wait_for(agent2("go"), BOUND)
    assert srv.chat.requests == []
    assert list(agent.memory.data) == []


# --- the ReACT agent: the tool list lives in its prompt ----------------------------------------


def react_step(tool: str, arguments: str) -> str:
    return f"Thought: t\nAction: {tool}\nAction Input: {arguments}"


async def test_react_lists_only_the_active_tools_in_its_prompt(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        react_step("search", '{"query": "x"}'),
        react_step("search", '{"query": "y"}'),
        "Thought: t\nAnswer: done",
    )
    calls = Calls()
    agent = ToolCallingAgent(calls.tools()).with_llm(make_llm(srv))
    agent.register_step_hook(
        lambda ctx: StepUpdate(active_tools=["search"] if ctx.step == 0 else ["add"])
    )

    output, record = await asyncio.wait_for(agent.run("go"), BOUND)

    assert output.content == "done"
    first, second = (r["messages"][0]["content"] for r in srv.chat.requests[:2])
    assert "search: Search the web." in first and "add:" not in first
    assert "add: Add two integers." in second and "search:" not in second
    assert calls.names == ["search"]  # the second search was not offered: refused
    observation = srv.chat.requests[2]["messages"][-1]["content"]
    assert observation.startswith("Observation: Error:") and "not available" in observation
    assert [s.tools for s in record.steps] == [["search"], ["add"], ["add"]]


async def test_react_with_a_dynamic_prompt_narrows_its_instructions(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("Thought: t\nAnswer: done")
    prompts: list[int] = []

    def instructions(ctx: RunContext[Any]) -> str:
        prompts.append(ctx.step)
        return "You are dynamic."

    agent = ToolCallingAgent(Calls().tools(), prompt=instructions).with_llm(make_llm(srv))
    agent.register_step_hook(lambda ctx: StepUpdate(active_tools=["add"]))
    await asyncio.wait_for(agent("go"), BOUND)

    system = srv.chat.requests[0]["messages"][0]["content"]
    assert system.startswith("You are dynamic.") and "add: Add" in system
    assert "search:" not in system
    assert prompts == [0]  # the callable runs once per step, hooks or not


async def test_react_sliding_window(srv: FakeOpenAIServer) -> None:
    srv.chat.script(react_step("add", '{"a": 1, "b": 2}'), "Thought: t\nAnswer: 3")
    agent = ToolCallingAgent(Calls().tools()).with_llm(make_llm(srv))
    agent.register_step_hook(lambda ctx: StepUpdate(messages=ctx.messages[-1:]))

    await asyncio.wait_for(agent("what is 1+2?"), BOUND)

    assert [m["role"] for m in srv.chat.requests[1]["messages"]] == ["system", "user"]
    assert srv.chat.requests[1]["messages"][1]["content"] == "Observation: 3"
    assert agent.memory.data[0].content == "what is 1+2?"
    assert len(agent.memory.data) == 4
    assert isinstance(agent.memory.data[-1], Message)


async def test_a_replaced_system_reaches_dynamic_and_streamed_calls(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("one", "two")
    dynamic = OpenaiToolCallingAgent(lambda ctx: "computed", []).with_llm(make_llm(srv))
    dynamic.register_step_hook(lambda ctx: StepUpdate(system=ctx.system.upper()))
    static = OpenaiToolCallingAgent("Be {tone}.", []).with_llm(make_llm(srv))
    static.register_step_hook(lambda ctx: StepUpdate(system="Replaced."))

    await asyncio.wait_for(dynamic("go"), BOUND)

    async def drain() -> list[Any]:
        return [e async for e in static.stream("go", tone="kind")]

    events = await asyncio.wait_for(drain(), BOUND)

    assert [r["messages"][0]["content"] for r in srv.chat.requests] == ["COMPUTED", "Replaced."]
    assert events[-1].record.steps[0].request[0].content == "Replaced."
