"""OpenAIResponses behind the seams every provider shares, through the real openai SDK and the
fake Responses API: provider-call observers and usage, guardrails, both agent types plain, the
answer as a tool, and a conversation moved to another provider, which gets only what it can
read (the Chat Completions fake and the Anthropic fake check that on the wire)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import FinalResult, ReasoningDelta, TextDelta
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.errors import GuardrailTripped
from promptimus.guardrails import InputGuardrail, OutputGuardrail, Verdict
from promptimus.llms import Anthropic, OpenAILike, OpenAIResponses
from promptimus.observe.provider_calls import ProviderCall, register_provider_call_observer
from promptimus.testing import (
    FakeAnthropicServer,
    FakeOpenAIServer,
    ResponsesReply,
    ToolCall,
)
from promptimus.tools import HostedTool


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def make_llm(srv: FakeOpenAIServer, **kwargs: Any) -> OpenAIResponses:
    kwargs.setdefault("reasoning_summary", "auto")
    return OpenAIResponses("o-test", api_key=srv.api_key, base_url=srv.base_url, **kwargs)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def kinds(items: list[dict[str, Any]]) -> list[str]:
    return [item.get("type", item.get("role")) for item in items]


class Calls:
    """A provider-call observer: what it saw of each call when it ended."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None, bool, Any, int]] = []

    def on_start(self, call: ProviderCall) -> None:
        pass

    def on_end(self, call: ProviderCall) -> None:
        self.seen.append((call.kind, call.model, call.stream, call.usage, call.requests))


async def test_observers_and_usage_see_each_call_with_cached_and_reasoning_tokens(
    srv: FakeOpenAIServer,
) -> None:
    usage = {"input_tokens": 200, "cached_tokens": 150, "output_tokens": 40, "reasoning_tokens": 30}
    srv.responses.script(
        ResponsesReply(
            reasoning="Add.", tool_calls=[ToolCall("add", {"a": 1, "b": 2})], usage=usage
        ),
        ResponsesReply(content="3.", usage=usage),
    )
    calls = Calls()
    handle = register_provider_call_observer(calls)
    try:
        agent = OpenaiToolCallingAgent("Add.", [add]).with_llm(make_llm(srv))
        with pm.track_usage() as report, pm.Session():
            events = [event async for event in agent.stream("1+2?")]
    finally:
        handle.remove()
    final = events[-1]
    assert isinstance(final, FinalResult)
    assert [(kind, model, stream, requests) for kind, model, stream, _, requests in calls.seen] == [
        ("llm", "o-test", True, 1),
        ("llm", "o-test", True, 1),
    ]
    for *_, seen_usage, _ in calls.seen:
        assert (seen_usage.prompt_tokens, seen_usage.cached_tokens) == (200, 150)
        assert (seen_usage.completion_tokens, seen_usage.reasoning_tokens) == (40, 30)
    total = report.total
    assert (total.prompt_tokens, total.cached_tokens, total.reasoning_tokens) == (400, 300, 60)
    assert final.record.usage.cached_tokens == 300 and total.requests == 2


async def test_an_input_guardrail_stops_the_run_before_any_request(srv: FakeOpenAIServer) -> None:
    def no_secrets(text: str) -> Verdict:
        return Verdict.block("no secrets") if "hunter2" in text else Verdict.allow()

    agent = OpenaiToolCallingAgent("Help.", [add], guardrails=[InputGuardrail(no_secrets)])
    agent.with_llm(make_llm(srv))
    with pm.Session(), pytest.raises(GuardrailTripped):
        await agent.forward("my password is hunter2")
    assert srv.responses.requests == []


async def test_a_replaced_answer_streams_as_replaced_without_its_reasoning(
    srv: FakeOpenAIServer,
) -> None:
    def redact(text: str) -> Verdict:
        return Verdict.replace(text.replace("hunter2", "[redacted]"))

    srv.responses.script(ResponsesReply(reasoning="Tell it.", content="It is hunter2."))
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[OutputGuardrail(redact)])
    agent.with_llm(make_llm(srv))
    with pm.Session():
        events = [event async for event in agent.stream("password?")]
    shown = [event for event in events if not isinstance(event, FinalResult)]
    assert "hunter2" not in repr(shown)
    assert not any(isinstance(event, ReasoningDelta) for event in shown)
    text = "".join(event.text for event in shown if isinstance(event, TextDelta))
    assert text == "It is [redacted]."


@pytest.mark.parametrize("agent_type", [OpenaiToolCallingAgent, ToolCallingAgent])
async def test_both_agent_types_run_a_tool_loop_plain(
    srv: FakeOpenAIServer, agent_type: type
) -> None:
    if agent_type is OpenaiToolCallingAgent:
        first: Any = ResponsesReply(
            reasoning="Add.", tool_calls=[ToolCall("add", {"a": 2, "b": 3})]
        )
    else:
        first = ResponsesReply(
            reasoning="Add.", content='Action: add\nAction Input: {"a": 2, "b": 3}'
        )
    srv.responses.script(first, "Answer: Five.")
    agent = agent_type("You add.", [add]).with_llm(make_llm(srv))
    with pm.Session():
        answer = await agent.forward("2+3?")
    assert "Five." in str(answer.content if isinstance(answer, Message) else answer)
    second = srv.responses.requests[1]["input"]
    assert "reasoning" in kinds(second)  # the reasoning went back before what it led to
    after = kinds(second)[kinds(second).index("reasoning") + 1]
    assert after in ("function_call", "assistant")
    if agent_type is OpenaiToolCallingAgent:
        assert "5" in [item.get("output") for item in second]


class Weather(BaseModel):
    city: str
    celsius: float


async def test_with_tools_the_answer_is_a_tool_and_goes_back_paired(srv: FakeOpenAIServer) -> None:
    paris = {"city": "Paris", "celsius": 21}
    srv.responses.script(
        ResponsesReply(reasoning="Look.", tool_calls=[ToolCall("add", {"a": 20, "b": 1})]),
        ResponsesReply(reasoning="Answer.", tool_calls=[ToolCall("final_result", paris)]),
    )
    agent = OpenaiToolCallingAgent("Weather.", [add], structural_output=Weather)
    agent.with_llm(make_llm(srv))
    with pm.Session():
        output, record = await agent.run("Paris?")
    assert output == Weather(**paris)
    for request in srv.responses.requests:
        assert [tool["name"] for tool in request["tools"]] == ["add", "final_result"]
        assert "format" not in (request.get("text") or {})  # no text.format beside tools
        final_tool = request["tools"][1]
        assert final_tool["strict"] is True
        assert final_tool["parameters"]["required"] == ["city", "celsius"]
    assert [call.name for call in record.tool_calls] == ["add"]


# --- a conversation moved to another provider ---------------------------------------------------


async def a_responses_conversation(srv: FakeOpenAIServer) -> list[Message]:
    """A tool loop on the Responses API with reasoning and a hosted call: what the memory keeps."""
    search = {"type": "web_search_call", "action": {"type": "search", "query": "sum"}}
    srv.responses.script(
        ResponsesReply(
            reasoning="Search, then add.",
            hosted_calls=[search],
            tool_calls=[ToolCall("add", {"a": 1, "b": 2})],
        ),
        ResponsesReply(reasoning="Done.", content="3."),
    )
    agent = OpenaiToolCallingAgent("Add.", [HostedTool("web_search"), add]).with_llm(make_llm(srv))
    with pm.Session():
        await agent.forward("1+2?")
        kept = list(agent.memory.data)
    assert any(message.thinking for message in kept)
    assert any(message.hosted_calls for message in kept)
    return [*kept, Message(role=MessageRole.USER, content="and 2+2?")]


async def test_a_conversation_moved_to_chat_completions_sends_only_what_it_reads(
    srv: FakeOpenAIServer,
) -> None:
    history = await a_responses_conversation(srv)
    srv.chat.script("4.")
    chat = OpenAILike("gpt-test", api_key=srv.api_key, base_url=srv.base_url)
    reply = await chat.achat(history)
    assert reply.content == "4."
    (sent,) = srv.chat.requests
    text = repr(sent)
    for foreign in ("rs_", "gAAAA", "encrypted", "web_search", "reasoning", "ws_"):
        assert foreign not in text, foreign
    roles = [message["role"] for message in sent["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    call_id = sent["messages"][1]["tool_calls"][0]["id"]
    assert sent["messages"][2]["tool_call_id"] == call_id


async def test_a_conversation_moved_to_anthropic_sends_only_what_it_reads(
    srv: FakeOpenAIServer,
) -> None:
    history = await a_responses_conversation(srv)
    with FakeAnthropicServer() as claude:
        claude.messages.script("4.")
        llm = Anthropic("claude-test", api_key=claude.api_key, base_url=claude.base_url)
        reply = await llm.achat(history)
        (sent,) = claude.messages.requests
    assert reply.content == "4."
    text = repr(sent["messages"])
    for foreign in ("rs_", "gAAAA", "encrypted", "web_search", "ws_", "Search, then add."):
        assert foreign not in text, foreign
    blocks = [
        block["type"]
        for message in sent["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
    ]
    assert "thinking" not in blocks and "redacted_thinking" not in blocks
    uses = [
        b["id"]
        for m in sent["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_use"
    ]
    results = [
        b["tool_use_id"]
        for m in sent["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b["type"] == "tool_result"
    ]
    assert uses and uses == results
