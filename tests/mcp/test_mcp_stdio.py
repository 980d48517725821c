"""MCP tools over stdio: a real MCP server (tests/support/mcp_servers/small_server.py, written
with the `mcp` SDK) started as a subprocess, used by the agents through the fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_llm import make_llm
from locations import MCP_SERVERS

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.errors import (
    DuplicateToolName,
    MCPError,
    ToolArgumentsError,
    ToolExecutionError,
    ToolTimeout,
)
from promptimus.mcp import MCPTool, MCPToolset
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools.tool import Tool

SERVER = str(MCP_SERVERS / "small_server.py")
BOUND = 60.0


def small(**options: Any) -> MCPToolset:
    return MCPToolset.stdio(sys.executable, [SERVER], **options)


def add(a: int, b: int) -> int:
    """Add two integers locally."""
    return a + b


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


def tool_contents(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


async def test_lists_the_servers_tools_as_it_wrote_them() -> None:
    async with small() as toolset:
        tools = toolset.tools
    assert {"add", "count", "weather", "fail", "hang", "shout"} <= set(tools)
    assert tools["add"].description.value == "Add two integers."
    schema = tools["add"].parameters_schema
    assert schema["required"] == ["a", "b"]
    assert schema["properties"]["a"]["type"] == "integer"
    assert isinstance(tools["add"], Tool) and isinstance(tools["add"], MCPTool)


async def test_openai_agent_calls_mcp_tools_through_the_fake_server(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("mcp_add", {"a": 2, "b": 3}, id="c1"),
                ToolCall("mcp_weather", {"city": "Kyiv"}, id="c2"),
                ToolCall("mcp_add", {"a": "two", "b": 3}, id="c3"),
                ToolCall("mcp_fail", {"reason": "because"}, id="c4"),
                ToolCall("mcp_nope", {}, id="c5"),
                ToolCall("add", {"a": 1, "b": 1}, id="c6"),
            ]
        ),
        Reply(content="done"),
    )
    async with small(prefix="mcp_", exclude=["hang"]) as toolset:
        agent = OpenaiToolCallingAgent("Use tools.", [toolset, add]).with_llm(make_llm(srv))
        output, record = await asyncio.wait_for(agent.run("go"), BOUND)

    assert output.content == "done"
    sent = {t["function"]["name"]: t["function"] for t in srv.chat.requests[0]["tools"]}
    assert "mcp_hang" not in sent and {"mcp_add", "mcp_weather", "add"} <= set(sent)
    assert sent["mcp_add"]["parameters"]["required"] == ["a", "b"]
    results = tool_contents(srv.chat.requests[1])
    assert json.loads(results["c1"]) == {"result": 5}
    assert json.loads(results["c2"]) == {"city": "Kyiv", "temperature": 21}
    assert results["c3"].startswith("Error:") and "'two' is not of type 'integer'" in results["c3"]
    assert results["c4"].startswith("Error:") and "mcp_fail" in results["c4"]
    assert results["c5"].startswith("Error:") and "no tool named 'mcp_nope'" in results["c5"]
    assert results["c6"] == "2"
    names = [call.name for call in record.steps[0].tool_calls]
    assert names == ["mcp_add", "mcp_weather", "mcp_add", "mcp_fail", "mcp_nope", "add"]


async def test_one_session_serves_every_call() -> None:
    async with small() as toolset:
        count = toolset.tool("count")
        answers = [await count.call("{}") for _ in range(3)]
        more = await asyncio.gather(*(count.call("{}") for _ in range(4)))
    assert [json.loads(a)["result"] for a in answers] == ["call 1", "call 2", "call 3"]
    assert sorted(json.loads(a)["result"] for a in more) == [f"call {n}" for n in range(4, 8)]


async def test_tool_from_mcp_and_include() -> None:
    async with small(include=["add", "shout"]) as toolset:
        assert set(toolset.tools) == {"add", "shout"}
        tool = Tool.from_mcp(toolset, "add")
        assert json.loads(await tool.call({"a": 40, "b": 2})) == {"result": 42}
        assert await tool.forward(a=1, b=2) == {"result": 3}
        with pytest.raises(MCPError, match="no tool 'weather'"):
            Tool.from_mcp(toolset, "weather")


async def test_include_of_a_missing_tool_is_an_error() -> None:
    with pytest.raises(MCPError, match="nope"):
        async with small(include=["add", "nope"]):
            pass


async def test_arguments_are_validated_before_sending() -> None:
    async with small() as toolset:
        with pytest.raises(ToolArgumentsError, match="'b' is a required property"):
            await toolset.tool("add").call({"a": 1})
        with pytest.raises(ToolArgumentsError, match="not valid JSON"):
            await toolset.tool("add").call('{"a": 1')


async def test_is_error_result_is_a_tool_error() -> None:
    async with small() as toolset:
        with pytest.raises(ToolExecutionError, match="fail"):
            await toolset.tool("fail").call({"reason": "x"})


async def test_a_hanging_tool_times_out_and_the_session_keeps_working() -> None:
    async with small(timeout=0.5) as toolset:
        with pytest.raises(ToolTimeout, match="'hang'"):
            await asyncio.wait_for(toolset.tool("hang").call({}), BOUND)
        assert json.loads(await toolset.tool("add").call({"a": 1, "b": 1})) == {"result": 2}


async def test_clash_with_a_local_tool_names_both() -> None:
    def weather(city: str) -> str:
        """Local weather."""
        return city

    async with small() as toolset:
        with pytest.raises(DuplicateToolName) as caught:
            OpenaiToolCallingAgent("p", [weather, toolset])
    message = str(caught.value)
    assert "'weather'" in message and "a local tool" in message and "MCP server" in message


async def test_a_closed_toolset_says_to_open_it() -> None:
    with pytest.raises(MCPError, match="async with"):
        OpenaiToolCallingAgent("p", [small()])


async def test_a_server_that_exits_at_start_names_the_command_and_its_stderr(
    tmp_path: Path,
) -> None:
    script = tmp_path / "broken_server.py"
    script.write_text(
        "import sys\nprint('boom: missing config file settings.toml', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    toolset = MCPToolset.stdio(sys.executable, [str(script)])
    with pytest.raises(MCPError) as caught:
        await asyncio.wait_for(toolset.open(), BOUND)
    message = str(caught.value)
    assert "broken_server.py" in message and "missing config file settings.toml" in message


async def test_a_command_that_does_not_exist() -> None:
    toolset = MCPToolset.stdio("/nonexistent/mcp-server-binary")
    with pytest.raises(MCPError, match="/nonexistent/mcp-server-binary"):
        await asyncio.wait_for(toolset.open(), BOUND)


async def test_server_stderr_goes_to_a_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="promptimus.mcp.server_stderr")
    async with small() as toolset:
        assert json.loads(await toolset.tool("shout").call({"text": "hi"})) == {"result": "HI"}
        for _ in range(200):
            if any("shouting hi" in r.getMessage() for r in caplog.records):
                break
            await asyncio.sleep(0.05)
    assert any("shouting hi" in r.getMessage() for r in caplog.records)


async def test_the_tool_list_is_refreshed_when_the_server_says_it_changed() -> None:
    async with small() as toolset:
        assert "extra" not in toolset.tools
        await toolset.tool("grow").call({})
        for _ in range(400):
            if "extra" in toolset.tools:
                break
            await asyncio.sleep(0.05)
        assert json.loads(await toolset.tool("extra").call({"text": "abc"})) == {"result": "cba"}


def offered(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


async def test_an_agent_offers_the_servers_current_tools_at_every_step(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(
        Reply(tool_calls=[ToolCall("grow", {}, id="c1")]),
        Reply(tool_calls=[ToolCall("extra", {"text": "abc"}, id="c2")]),
        Reply(tool_calls=[ToolCall("shrink", {}, id="c3")]),
        Reply(tool_calls=[ToolCall("extra", {"text": "abc"}, id="c4")]),
        Reply(content="done"),
    )
    async with small(exclude=["add", "hang", "die"]) as toolset:
        agent = OpenaiToolCallingAgent("Use tools.", [toolset, add]).with_llm(make_llm(srv))
        output, record = await asyncio.wait_for(agent.run("go"), BOUND)
        assert "extra" not in agent.tools  # gone from the agent's tree as from the server

    assert output.content == "done"
    steps = [offered(request) for request in srv.chat.requests]
    assert "extra" not in steps[0] and "add" in steps[0]
    assert "extra" in steps[1] and "extra" in steps[2]  # offered the step after it appeared
    assert "extra" not in steps[3] and "extra" not in steps[4]
    calls = {call.id: call for call in record.tool_calls}
    assert json.loads(calls["c2"].result or "") == {"result": "cba"}
    assert calls["c4"].error is not None and "no tool named 'extra'" in calls["c4"].error


async def test_include_filters_the_tools_a_server_adds_later(srv: FakeOpenAIServer) -> None:
    from promptimus.agents.react_agent import ToolCallingAgent

    srv.chat.script(
        "Thought: grow\nAction: grow\nAction Input: {}",
        'Thought: use it\nAction: extra\nAction Input: {"text": "abc"}',
        "Thought: done\nAnswer: cba",
    )
    async with small(include=["grow"]) as toolset:
        agent = ToolCallingAgent([toolset]).with_llm(make_llm(srv))
        reply = await asyncio.wait_for(agent.forward("go"), BOUND)
    assert reply.content == "cba"
    systems = [request["messages"][0]["content"] for request in srv.chat.requests]
    # include= filters what the server adds later too: `extra` is never offered
    assert not any("A tool added while the server runs." in text for text in systems)
    observation = srv.chat.requests[2]["messages"][-1]["content"]
    assert "no tool named 'extra'" in observation


async def test_the_react_agent_describes_a_tool_the_server_added(srv: FakeOpenAIServer) -> None:
    from promptimus.agents.react_agent import ToolCallingAgent

    srv.chat.script(
        "Thought: grow\nAction: grow\nAction Input: {}",
        'Thought: use it\nAction: extra\nAction Input: {"text": "abc"}',
        "Thought: done\nAnswer: cba",
    )
    async with small(exclude=["hang", "die"]) as toolset:
        agent = ToolCallingAgent([toolset]).with_llm(make_llm(srv))
        reply = await asyncio.wait_for(agent.forward("go"), BOUND)
    assert reply.content == "cba"
    systems = [request["messages"][0]["content"] for request in srv.chat.requests]
    assert "A tool added while the server runs." not in systems[0]
    assert "A tool added while the server runs." in systems[1]
    observation = srv.chat.requests[2]["messages"][-1]["content"]
    assert "cba" in observation


async def test_an_agent_with_mcp_tools_digests_and_checkpoints(tmp_path: Path) -> None:
    async with small(include=["add"], prefix="m_") as toolset:
        agent = OpenaiToolCallingAgent("Use tools.", [toolset, add])
        params = dict(agent.named_parameters())
        assert params["tools.m_add.description"].value == "Add two integers."
        digest = agent.digest()
        agent.save(tmp_path / "agent.toml")
        assert "Add two integers." in (tmp_path / "agent.toml").read_text()
        toolset.tool("m_add").description.value = "Sum two whole numbers."
        assert agent.digest() != digest
        agent.load(tmp_path / "agent.toml")
        assert toolset.tool("m_add").description.value == "Add two integers."
        assert agent.digest() == digest
