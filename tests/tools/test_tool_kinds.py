"""The public `Tool` base: `Tool(...)` builds a function or a module tool, every kind (composite and
MCP ones included) is a `Tool`, and a new kind written against the base alone runs in an agent
like any other tool: validation errors and timeouts go back to the model, approval applies."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable
from typing import Any

import pytest

from promptimus import Module
from promptimus.agents import NeedsApproval, OpenaiToolCallingAgent
from promptimus.errors import ToolArgumentsError, ToolError
from promptimus.llms import ScriptedLLM
from promptimus.mcp import MCPTool, MCPToolset
from promptimus.tools import CompositeTool, FunctionTool, ModuleTool, RunContext, Tool

S = ScriptedLLM
CAP = 30.0  # a regression fails after this many seconds instead of hanging the suite


def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


class Echo(Module):
    async def forward(self, request: str) -> str:
        return f"echo: {request}"


class Shout(Tool):
    """A kind of tool built on the public base only: the model sends `{"text": ...}`."""

    def __init__(self, timeout: float | None = None, requires_approval: bool = False) -> None:
        super().__init__(
            name="shout",
            description="Upper-case a text.",
            timeout=timeout,
            requires_approval=requires_approval,
        )
        self.delay = 0.0

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": False,
        }

    def validate(self, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
        values = json.loads(arguments) if isinstance(arguments, str) else dict(arguments or {})
        if set(values) != {"text"} or not isinstance(values["text"], str):
            raise ToolArgumentsError('Tool \'shout\': send {"text": "..."}.')
        return values

    def handle_call(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None
    ) -> Awaitable[Any]:
        return self.forward(**self.validate(arguments))

    async def forward(self, text: str) -> str:
        await asyncio.sleep(self.delay)
        return text.upper()


def tool_results(llm: ScriptedLLM) -> dict[str | None, str]:
    return {m.tool_call_id: m.content for m in llm.requests[1][0] if m.role == "tool"}


def test_tool_builds_a_function_or_a_module_tool() -> None:
    echo = Echo()
    assert type(Tool(add)) is FunctionTool
    assert type(Tool.decorate(add)) is FunctionTool
    assert type(Tool.from_module(echo)) is ModuleTool
    assert type(Tool(echo)) is ModuleTool
    assert type(Tool(echo.forward, module=echo)) is ModuleTool
    assert type(Tool(echo.forward)) is FunctionTool  # a bound method, no module given
    assert Tool(add).function is add
    assert Tool.from_module(echo, name="echo").module is echo


def test_every_kind_is_a_tool_and_none_carries_another_kinds_state() -> None:
    composite = CompositeTool("both", "Run several.", [Tool(add)])
    toolset = MCPToolset.stdio(sys.executable, ["-c", "pass"])  # never opened
    remote = MCPTool(toolset, "forecast", "Forecast.", {"type": "object", "properties": {}})
    for tool in (composite, remote, Shout()):
        assert isinstance(tool, Tool)
        assert not hasattr(tool, "function")  # no Python function of their own
    assert remote.server == toolset.name and Shout().server is None


def test_a_kind_passes_the_base_its_settings_by_keyword() -> None:
    class Positional(Tool):
        pass

    with pytest.raises(ToolError, match=r"Positional.__init__ must call super\(\).__init__"):
        Positional(add)


async def test_a_kind_built_on_the_base_runs_in_an_agent() -> None:
    shout = Shout()
    llm = S(
        [
            S.tool_calls(S.call("shout", {"text": "hi"}, id="c1"), S.call("shout", {}, id="c2")),
            "done",
        ]
    )
    agent = OpenaiToolCallingAgent("p", [shout, add]).with_llm(llm)

    output, record = await asyncio.wait_for(agent.run("go"), CAP)

    assert output.content == "done"
    sent = llm.requests[0][1]["tools"]
    assert [t["function"]["name"] for t in sent] == ["shout", "add"]
    assert sent[0]["function"]["description"] == "Upper-case a text."
    assert sent[0]["function"]["parameters"] == shout.parameters_schema
    results = tool_results(llm)
    assert results["c1"] == "HI"
    assert 'send {"text"' in results["c2"]
    assert [c.server for c in record.steps[0].tool_calls] == [None, None]


async def test_the_base_bounds_a_kinds_call_by_its_timeout() -> None:
    shout = Shout(timeout=0.05)
    shout.delay = CAP
    llm = S([S.tool_call("shout", {"text": "hi"}, id="c1"), "gave up"])
    agent = OpenaiToolCallingAgent("p", [shout]).with_llm(llm)

    output, _ = await asyncio.wait_for(agent.run("go"), CAP)

    assert output.content == "gave up"
    assert "'shout' did not return within 0.05 s" in tool_results(llm)["c1"]


async def test_a_kind_asking_for_approval_pauses_the_run() -> None:
    shout = Shout(requires_approval=True)
    assert await shout.needs_approval('{"text": "hi"}') is True
    assert await shout.needs_approval('{"wrong": 1}') is False  # runs nothing: no approval
    llm = S([S.tool_call("shout", {"text": "hi"}, id="c1"), "done"])
    agent = OpenaiToolCallingAgent("p", [shout]).with_llm(llm)

    events = [event async for event in agent.stream("go")]

    paused = [e for e in events if isinstance(e, NeedsApproval)]
    pending = [(call.tool, call.arguments) for call in paused[0].pending]
    assert pending == [("shout", {"text": "hi"})]
    assert not llm.requests[1:]  # nothing ran: the run waits for a person


def test_tool_takes_its_function_by_keyword_too() -> None:
    echo = Echo()
    assert type(Tool(fn=add)) is FunctionTool
    assert type(Tool(fn=echo)) is ModuleTool
    assert Tool(fn=add, name="plus").name == "plus"
