"""MCP tool calls in run records, streamed events and tracing spans: like local tool calls, with
the server named (None for local tools). Real MCP servers (stdio and HTTP), both agent types,
the fake OpenAI server, and the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest
from fake_llm import make_llm
from locations import MCP_SERVERS
from test_mcp_http import free_port, start_http_server, stop

from promptimus.agents.events import ToolCallEvent, ToolErrorEvent, ToolResultEvent
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.mcp import MCPToolset
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall

SERVER = str(MCP_SERVERS / "small_server.py")
BOUND = 60.0


def double(n: int) -> int:
    """Double a number locally."""
    return 2 * n


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


def script_three_calls(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("add", {"a": 2, "b": 3}, id="c1"),
                ToolCall("fail", {"reason": "no"}, id="c2"),
                ToolCall("double", {"n": 4}, id="c3"),
            ]
        ),
        Reply(content="done"),
    )


async def test_records_name_the_server_the_server_gave_itself(srv: FakeOpenAIServer) -> None:
    script_three_calls(srv)
    async with MCPToolset.stdio(sys.executable, [SERVER], include=["add", "fail"]) as toolset:
        assert toolset.name == "small"  # the server's own name, from the handshake
        agent = OpenaiToolCallingAgent("Use tools.", [toolset, double]).with_llm(make_llm(srv))
        _, record = await asyncio.wait_for(agent.run("go"), BOUND)

    calls = {call.id: call for call in record.tool_calls}
    assert [calls[i].server for i in ("c1", "c2", "c3")] == ["small", "small", None]
    assert json.loads(calls["c1"].result or "") == {"result": 5}
    assert calls["c2"].error is not None and "MCP server 'small'" in calls["c2"].error
    dumped = record.to_dict()["steps"][0]["tool_calls"]
    assert [(call["id"], call["server"]) for call in dumped] == [
        ("c1", "small"),
        ("c2", "small"),
        ("c3", None),
    ]
    json.dumps(record.to_dict())  # still plain JSON


async def test_streamed_events_name_the_server(srv: FakeOpenAIServer) -> None:
    script_three_calls(srv)
    async with MCPToolset.stdio(
        sys.executable, [SERVER], include=["add", "fail"], name="calculator"
    ) as toolset:
        agent = OpenaiToolCallingAgent("Use tools.", [toolset, double]).with_llm(make_llm(srv))
        events = [event async for event in agent.stream("go")]

    asked = {e.id: e.server for e in events if isinstance(e, ToolCallEvent)}
    done = {e.id: e.server for e in events if isinstance(e, ToolResultEvent)}
    failed = {e.id: e.server for e in events if isinstance(e, ToolErrorEvent)}
    assert asked == {"c1": "calculator", "c2": "calculator", "c3": None}
    assert done == {"c1": "calculator", "c3": None}
    assert failed == {"c2": "calculator"}


async def test_react_agent_over_http_names_the_server(srv: FakeOpenAIServer) -> None:
    port = free_port()
    process = start_http_server(port)
    try:
        srv.chat.script(
            'Thought: add\nAction: add\nAction Input: {"a": 20, "b": 22}',
            'Thought: double\nAction: double\nAction Input: {"n": 21}',
            "Thought: I know\nAnswer: 42",
        )
        async with MCPToolset.http(f"http://127.0.0.1:{port}/mcp", include=["add"]) as toolset:
            agent = ToolCallingAgent([toolset, double]).with_llm(make_llm(srv))
            events = [event async for event in agent.stream("20+22?")]
    finally:
        stop(process)

    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert [(e.name, e.server) for e in calls] == [("add", "small"), ("double", None)]
    assert [(e.name, e.server) for e in results] == [("add", "small"), ("double", None)]
    record = events[-1].record
    assert [call.server for call in record.tool_calls] == ["small", None]


# --- tracing ------------------------------------------------------------------------------------

otel_sdk = pytest.importorskip("opentelemetry.sdk", reason="install the dev dependency group")

from opentelemetry.sdk.trace import ReadableSpan  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode  # noqa: E402

from promptimus.tracing.spans import TOOL_SERVER  # noqa: E402


def span(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    (found,) = [s for s in spans if s.name == name]
    return found


def attrs(found: ReadableSpan) -> dict[str, Any]:
    return dict(found.attributes or {})


@pytest.mark.parametrize("kind", ["openai", "react"])
async def test_mcp_tool_calls_are_traced_like_local_ones_with_the_server(
    exporter: InMemorySpanExporter, srv: FakeOpenAIServer, kind: str
) -> None:
    if kind == "openai":
        script_three_calls(srv)
    else:
        srv.chat.script(
            'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 3}',
            'Thought: fail\nAction: fail\nAction Input: {"reason": "no"}',
            'Thought: double\nAction: double\nAction Input: {"n": 4}',
            "Thought: done\nAnswer: done",
        )
    async with MCPToolset.stdio(sys.executable, [SERVER], include=["add", "fail"]) as toolset:
        tools = [toolset, double]
        agent = (
            OpenaiToolCallingAgent("Use tools.", tools)
            if kind == "openai"
            else ToolCallingAgent(tools, prompt="Use tools.")
        ).with_llm(make_llm(srv))
        await asyncio.wait_for(agent.forward("go"), BOUND)

    spans = exporter.get_finished_spans()
    root = span(spans, "root")
    added, failed, doubled = (
        span(spans, "root.tools.add"),
        span(spans, "root.tools.fail"),
        span(spans, "root.tools.double"),
    )
    for tool_span in (added, failed, doubled):
        assert tool_span.parent is not None and tool_span.parent.span_id == root.context.span_id
        assert attrs(tool_span)["openinference.span.kind"] == "TOOL"
        assert attrs(tool_span)["gen_ai.operation.name"] == "execute_tool"
    assert attrs(added)[TOOL_SERVER] == "small" == attrs(failed)[TOOL_SERVER]
    assert json.loads(attrs(added)["metadata"])["tool_server"] == "small"
    assert TOOL_SERVER not in attrs(doubled)
    assert "tool_server" not in json.loads(attrs(doubled)["metadata"])
    assert attrs(added)["tool.name"] == "add" and attrs(added)["tool.description"]
    assert json.loads(attrs(added)["input.value"]) == {"a": 2, "b": 3}
    assert json.loads(attrs(added)["output.value"]) == {"result": 5}
    assert failed.status.status_code is StatusCode.ERROR
    assert "'fail'" in (failed.status.description or "")
    assert added.status.status_code is StatusCode.OK
