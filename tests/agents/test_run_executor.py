"""The agent loop's three effects on the world go through `agent.executor`: a wrapper that
replaces it sees every model request, every tool call and the memory commit of a run, for both
kinds of agent, streamed or not, and can replay what it recorded instead of doing it again."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fake_llm import make_llm

from promptimus.agents import (
    BaseAgent,
    ModelRequest,
    OpenaiToolCallingAgent,
    RunExecutor,
    ToolCallingAgent,
)
from promptimus.agents.base_agent import ToolInvocation
from promptimus.agents.run_state import RunState
from promptimus.core import ModuleDict
from promptimus.dto import Message, MessageDelta
from promptimus.dto.run_record import ToolCallRecord
from promptimus.errors import MaxIterExceeded
from promptimus.modules.memory import Memory
from promptimus.prompts import BasePrompt
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools import RunContext, Tool

BOUND = 30.0


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


class Lookups:
    def __init__(self) -> None:
        self.keys: list[str] = []

    def tool(self) -> Tool:
        def lookup(key: str) -> str:
            """Look a key up."""
            self.keys.append(key)
            return f"value of {key}"

        return Tool(lookup)


class Recording(RunExecutor):
    """Logs each effect, then lets the default carry it out."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []

    async def call_model(
        self,
        prompt: BasePrompt,
        request: ModelRequest,
        on_delta: Any = None,
    ) -> Message:
        reply = await super().call_model(prompt, request, on_delta)
        self.log.append(("model", len(request.messages), on_delta is not None, reply.content))
        return reply

    async def run_tool_call(
        self,
        tools: ModuleDict,
        call: ToolInvocation,
        ctx: RunContext[Any],
        default_timeout: float | None,
    ) -> ToolCallRecord:
        entry = await super().run_tool_call(tools, call, ctx, default_timeout)
        self.log.append(("tool", call.name, entry.result))
        return entry

    async def commit(self, memory: Memory, messages: list[Message]) -> None:
        self.log.append(("commit", [m.role.value for m in messages]))
        await super().commit(memory, messages)


def native(lookups: Lookups) -> BaseAgent[Any]:
    return OpenaiToolCallingAgent("You look things up.", [lookups.tool()])


def react(lookups: Lookups) -> BaseAgent[Any]:
    return ToolCallingAgent([lookups.tool()], prompt="You look things up.")


SCRIPTS = {
    native: (Reply(tool_calls=[ToolCall("lookup", {"key": "k"}, id="c1")]), "It is v."),
    react: (
        'Thought: t\nAction: lookup\nAction Input: {"key": "k"}',
        "Thought: t\nAnswer: It is v.",
    ),
}


async def answer(agent: BaseAgent[Any], streamed: bool) -> str:
    if not streamed:
        reply = await asyncio.wait_for(agent("What is k?"), BOUND)
        return str(reply.content)
    events = [event async for event in agent.stream("What is k?")]
    return str(events[-1].output.content)


@pytest.mark.parametrize("streamed", [False, True], ids=["forward", "stream"])
@pytest.mark.parametrize("kind", [native, react], ids=["native", "react"])
async def test_a_replaced_executor_sees_each_model_request_tool_call_and_commit(
    srv: FakeOpenAIServer, kind: Any, streamed: bool
) -> None:
    srv.chat.script(*SCRIPTS[kind])
    lookups = Lookups()
    agent = kind(lookups).with_llm(make_llm(srv))
    agent.executor = executor = Recording()

    assert await answer(agent, streamed) == "It is v."

    first, tool, second, commit = executor.log
    assert first[0] == "model" and first[2] is streamed
    assert tool == ("tool", "lookup", "value of k")
    assert second[0] == "model" and second[1] > first[1] and second[3].endswith("It is v.")
    assert commit[0] == "commit" and commit[1][0] == "user" and commit[1][-1] == "assistant"
    assert [m.role.value for m in agent.memory.data] == commit[1]
    assert lookups.keys == ["k"]
    assert len(srv.chat.requests) == 2


async def test_an_executor_on_one_agent_leaves_the_others_alone(srv: FakeOpenAIServer) -> None:
    srv.chat.script("one", "two")
    watched, plain = native(Lookups()), native(Lookups())
    watched.executor = executor = Recording()
    for agent in (watched, plain):
        await asyncio.wait_for(agent.with_llm(make_llm(srv))("hi"), BOUND)
    assert [entry[0] for entry in executor.log] == ["model", "commit"]
    assert type(plain.executor) is RunExecutor


class Journal(RunExecutor):
    """Records each model reply and tool call in order and replays them on the next run, the
    way a durable run replays finished steps; `crash_at` stops a run before that model request."""

    def __init__(self) -> None:
        self.done: list[Message | ToolCallRecord] = []
        self.position = 0
        self.crash_at: int | None = None

    def _replayed(self) -> Message | ToolCallRecord | None:
        self.position += 1
        return self.done[self.position - 1] if self.position <= len(self.done) else None

    async def call_model(
        self, prompt: BasePrompt, request: ModelRequest, on_delta: Any = None
    ) -> Message:
        if self.position == self.crash_at:
            raise ConnectionError("the worker died")
        replayed = self._replayed()
        if isinstance(replayed, Message):
            return replayed
        reply = await super().call_model(prompt, request, on_delta)
        self.done.append(reply)
        return reply

    async def run_tool_call(
        self,
        tools: ModuleDict,
        call: ToolInvocation,
        ctx: RunContext[Any],
        default_timeout: float | None,
    ) -> ToolCallRecord:
        replayed = self._replayed()
        if isinstance(replayed, ToolCallRecord):
            return replayed
        entry = await super().run_tool_call(tools, call, ctx, default_timeout)
        self.done.append(entry)
        return entry


async def test_a_wrapper_replays_finished_steps_instead_of_repeating_them(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(SCRIPTS[native][0], "It is v.")
    lookups = Lookups()
    agent = native(lookups).with_llm(make_llm(srv))
    agent.executor = journal = Journal()
    journal.crash_at = 2  # after the first reply and its tool call

    with pytest.raises(ConnectionError):
        await asyncio.wait_for(agent("What is k?"), BOUND)
    assert len(srv.chat.requests) == 1 and lookups.keys == ["k"]
    assert list(agent.memory.data) == []  # a failed run commits nothing

    journal.position, journal.crash_at = 0, None
    reply = await asyncio.wait_for(agent("What is k?"), BOUND)

    assert reply.content == "It is v."
    assert lookups.keys == ["k"]  # the tool ran once
    assert len(srv.chat.requests) == 2  # the first step was not asked again
    sent = srv.chat.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[-1]["content"] == "value of k"


async def test_a_run_that_fails_never_reaches_the_commit(srv: FakeOpenAIServer) -> None:
    call = Reply(tool_calls=[ToolCall("lookup", {"key": "k"}, id="c1")])
    srv.chat.script(call, call)
    agent = OpenaiToolCallingAgent("p", [Lookups().tool()], max_steps=2).with_llm(make_llm(srv))
    agent.executor = executor = Recording()

    with pytest.raises(MaxIterExceeded):
        await asyncio.wait_for(agent("loop"), BOUND)

    assert [entry[0] for entry in executor.log] == ["model", "tool", "model", "tool"]
    assert list(agent.memory.data) == []


async def test_a_streamed_run_hands_the_executor_a_sink_for_the_pieces(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("Hello there.")
    pieces: list[str] = []

    class Tapped(RunExecutor):
        async def call_model(
            self, prompt: BasePrompt, request: ModelRequest, on_delta: Any = None
        ) -> Message:
            assert on_delta is not None

            def tap(delta: MessageDelta) -> None:
                pieces.append(delta.content or "")
                on_delta(delta)

            return await super().call_model(prompt, request, tap)

    agent = OpenaiToolCallingAgent("p", []).with_llm(make_llm(srv))
    agent.executor = Tapped()
    events = [event async for event in agent.stream("hi")]

    texts = [event.text for event in events if type(event).__name__ == "TextDelta"]
    assert "".join(pieces) == "".join(texts) == "Hello there."
    assert events[-1].output.content == "Hello there."


class Holding(RunExecutor):
    """Holds every call of one tool for a decision, and starts runs from a fixed history."""

    holds_calls = True

    def __init__(self, tool: str, history: list[Message]) -> None:
        self.tool, self.start = tool, history

    async def history(self, memory: Memory) -> list[Message]:
        return list(self.start)

    async def hold(
        self, tools: ModuleDict, call: ToolInvocation, ctx: RunContext[Any]
    ) -> str | None:
        return "check it first" if call.name == self.tool else None


@pytest.mark.parametrize("approved", [True, "not today"])
async def test_an_executor_may_hold_a_call_for_a_decision_and_set_the_history_a_run_starts_from(
    srv: FakeOpenAIServer, approved: bool | str
) -> None:
    lookups = Lookups()
    agent = OpenaiToolCallingAgent("p", [lookups.tool()]).with_llm(make_llm(srv))
    earlier = [Message(role="user", content="earlier"), Message(role="assistant", content="ok")]
    agent.executor = Holding("lookup", earlier)
    srv.chat.script(Reply(tool_calls=[ToolCall("lookup", {"key": "a"}, id="c1")]), "Done.")

    paused = await agent.run("go")

    assert paused.status == "needs_approval"
    assert [(p.id, p.tool, p.reason) for p in paused.pending] == [
        ("c1", "lookup", "check it first")
    ]
    assert lookups.keys == []
    first = srv.chat.requests[0]["messages"]
    assert [m["content"] for m in first[1:]] == ["earlier", "ok", "go"]
    assert paused.state is not None
    saved = RunState.from_json(paused.state.to_json())  # the reason survives a restart
    assert saved.pending == paused.pending
    result = await agent.run(resume=saved, approvals={"c1": approved})
    assert result.output.content == "Done."
    assert lookups.keys == (["a"] if approved is True else [])
