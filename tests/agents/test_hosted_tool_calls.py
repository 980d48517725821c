"""Calls of hosted tools (the server runs them while it writes the reply) in an agent's stream,
run record and trace: both agent types, through the fake Responses API and the openai SDK.
Nothing of them runs locally, and the next request carries no output for them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import (
    AgentEvent,
    FinalResult,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
)
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.agents.run_record import capture_records
from promptimus.dto.run_record import RunRecord
from promptimus.llms import OpenAIResponses
from promptimus.testing import FakeOpenAIServer, ResponsesReply, ToolCall
from promptimus.tools import HostedTool

SEARCH = {"type": "web_search_call", "action": {"type": "search", "query": "oslo population"}}
CODE = {
    "type": "code_interpreter_call",
    "code": "print(709037 + 1)",
    "container_id": "cntr_1",
    "outputs": [{"type": "logs", "logs": "709038"}],
}


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def llm(srv: FakeOpenAIServer, **kwargs: Any) -> OpenAIResponses:
    return OpenAIResponses("o-test", api_key=srv.api_key, base_url=srv.base_url, **kwargs)


ran_locally: list[str] = []


def add(a: int, b: int) -> int:
    """Add two integers."""
    ran_locally.append("add")
    return a + b


def agent(srv: FakeOpenAIServer) -> OpenaiToolCallingAgent:
    tools: list[Any] = [
        HostedTool("web_search"),
        HostedTool("code_interpreter", container={"type": "auto"}),
        add,
    ]
    return OpenaiToolCallingAgent("Answer.", tools).with_llm(llm(srv))


def script(srv: FakeOpenAIServer) -> None:
    srv.responses.script(
        ResponsesReply(hosted_calls=[SEARCH], tool_calls=[ToolCall("add", {"a": 1, "b": 2})]),
        ResponsesReply(hosted_calls=[CODE], content="About 709,038."),
    )


def tool_events(events: list[AgentEvent]) -> list[tuple[str, str, bool, int]]:
    return [
        (type(event).__name__, event.name, event.hosted, event.step)
        for event in events
        if isinstance(event, ToolCallEvent | ToolResultEvent)
    ]


def check_record(record: RunRecord) -> None:
    calls = [(call.name, call.hosted) for call in record.tool_calls]
    assert calls == [("web_search", True), ("add", False), ("code_interpreter", True)]
    search, _, code = record.tool_calls
    assert search.id and search.id.startswith("ws_")
    assert json.loads(search.arguments) == {"action": SEARCH["action"]}
    assert search.result == "completed" and search.error is None
    assert json.loads(code.arguments) == {"code": "print(709037 + 1)", "container_id": "cntr_1"}
    assert json.loads(code.result or "") == {"outputs": CODE["outputs"]}
    first, second = record.steps
    assert [call.name for call in first.hosted_calls] == ["web_search"]
    assert [call.name for call in first.tool_calls] == ["add"]  # what ran here, as before
    assert [call.name for call in second.hosted_calls] == ["code_interpreter"]
    again = RunRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert [(call.name, call.hosted) for call in again.tool_calls] == calls
    assert "ran on the server" in str(record)
    assert record.summary().startswith("2 steps, 3 tool calls (2 ran on the server)")


def check_wire(srv: FakeOpenAIServer) -> None:
    """The server got its own calls back as it wrote them, and an output for the local one
    only."""
    second = srv.responses.requests[1]["input"]
    kinds = [item.get("type", item.get("role")) for item in second]
    assert kinds == ["system", "user", "web_search_call", "function_call", "function_call_output"]
    assert second[2]["action"] == SEARCH["action"] and second[2]["id"].startswith("ws_")
    assert second[3]["call_id"] == second[4]["call_id"]


async def test_a_streamed_run_shows_the_server_s_calls_and_runs_none_of_them(
    srv: FakeOpenAIServer,
) -> None:
    ran_locally.clear()
    script(srv)
    events = [event async for event in agent(srv).stream("How many people live in Oslo, +1?")]

    final = events[-1]
    assert isinstance(final, FinalResult) and final.output.content == "About 709,038."
    assert tool_events(events) == [
        ("ToolCallEvent", "web_search", True, 0),
        ("ToolResultEvent", "web_search", True, 0),
        ("ToolCallEvent", "add", False, 0),
        ("ToolResultEvent", "add", False, 0),
        ("ToolCallEvent", "code_interpreter", True, 1),
        ("ToolResultEvent", "code_interpreter", True, 1),
    ]
    search_call, search_result = [e for e in events if getattr(e, "hosted", False)][:2]
    assert isinstance(search_call, ToolCallEvent) and isinstance(search_result, ToolResultEvent)
    assert search_call.id == search_result.id and search_call.id == final.record.tool_calls[0].id
    assert json.loads(search_call.arguments) == {"action": SEARCH["action"]}
    assert search_result.result == "completed"
    code_at = next(i for i, e in enumerate(events) if getattr(e, "name", "") == "code_interpreter")
    text_at = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert code_at < text_at  # the server ran it before it wrote the answer
    assert ran_locally == ["add"]
    check_record(final.record)
    check_wire(srv)


async def test_a_plain_run_records_the_server_s_calls(srv: FakeOpenAIServer) -> None:
    ran_locally.clear()
    script(srv)
    result = await agent(srv).run("How many people live in Oslo, +1?")
    assert result.output.content == "About 709,038."
    assert ran_locally == ["add"]
    check_record(result.record)
    check_wire(srv)


async def test_a_react_agent_shows_the_server_s_calls_too(srv: FakeOpenAIServer) -> None:
    srv.responses.script(
        ResponsesReply(hosted_calls=[SEARCH], content="Answer: About 709,000."),
    )
    # the ReACT agent lists its own tools in its prompt; the hosted one comes with the provider
    provider = llm(srv, call_kwargs={"tools": [HostedTool("web_search").to_openai()]})
    react = ToolCallingAgent("Answer.", [add]).with_llm(provider)
    events = [event async for event in react.stream("How many people live in Oslo?")]

    final = events[-1]
    assert isinstance(final, FinalResult) and "709,000" in str(final.output)
    assert tool_events(events) == [
        ("ToolCallEvent", "web_search", True, 0),
        ("ToolResultEvent", "web_search", True, 0),
    ]
    assert [(call.name, call.hosted) for call in final.record.tool_calls] == [("web_search", True)]
    assert srv.responses.requests[0]["tools"] == [{"type": "web_search"}]


async def test_the_trace_shows_the_server_s_calls(srv: FakeOpenAIServer, exporter: Any) -> None:
    script(srv)
    await agent(srv).run("How many people live in Oslo, +1?")
    events = [
        (span.name, event)
        for span in exporter.get_finished_spans()
        for event in span.events
        if event.name == "hosted_tool_call"
    ]
    assert [(name, dict(event.attributes or {})["tool"]) for name, event in events] == [
        ("root", "web_search"),
        ("root", "code_interpreter"),
    ]
    attributes = dict(events[0][1].attributes or {})
    assert str(attributes["tool_call_id"]).startswith("ws_")
    assert attributes["status"] == "completed" and attributes["step"] == 0
    assert "oslo population" in str(attributes["arguments"])


async def test_a_blocked_answer_shows_none_of_the_server_s_calls_but_records_them(
    srv: FakeOpenAIServer,
) -> None:
    from promptimus.errors import GuardrailTripped
    from promptimus.guardrails import OutputGuardrail, Verdict

    def no_numbers(text: str) -> Verdict:
        return Verdict.block("no figures") if any(c.isdigit() for c in text) else Verdict.allow()

    srv.responses.script(ResponsesReply(hosted_calls=[SEARCH], content="About 709,000."))
    guarded = OpenaiToolCallingAgent(
        "Answer.", [HostedTool("web_search")], guardrails=[OutputGuardrail(no_numbers)]
    ).with_llm(llm(srv))
    events: list[AgentEvent] = []
    with capture_records() as runs, pytest.raises(GuardrailTripped):
        async for event in guarded.stream("How many people live in Oslo?"):
            events.append(event)
    assert tool_events(events) == []  # held with the answer, and the answer was blocked
    assert "oslo population" not in repr(events)
    (record,) = runs  # the record keeps what the server did
    assert [(call.name, call.hosted) for call in record.tool_calls] == [("web_search", True)]


async def test_a_call_that_failed_on_the_server_is_recorded_as_failed(
    srv: FakeOpenAIServer,
) -> None:
    srv.responses.script(
        ResponsesReply(hosted_calls=[{**SEARCH, "status": "failed"}], content="I could not search.")
    )
    agent = OpenaiToolCallingAgent("Answer.", [HostedTool("web_search")]).with_llm(llm(srv))
    result = await agent.run("How many people live in Oslo?")
    (call,) = result.record.tool_calls
    assert call.hosted and call.result is None
    assert call.error == "web_search failed on the server (status 'failed')"
    assert result.record.summary().startswith("1 step, 1 tool call (1 failed, 1 ran on the server)")
