"""`RunResult` prints a short summary (status, steps, tool calls, tokens, the answer or the calls
waiting for approval) and renders as an escaped HTML table; the full run stays in `output`,
`record` and `pending`."""

from __future__ import annotations

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.llms import OpenAILike
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools import Tool


@Tool.decorate
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18 degrees in {city}"


@Tool.decorate(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def agent_on(server: FakeOpenAIServer) -> OpenaiToolCallingAgent:
    llm = OpenAILike("fake-model", api_key=server.api_key, base_url=server.base_url)
    return OpenaiToolCallingAgent("p", [get_weather, delete_file]).with_llm(llm)


async def test_a_completed_run_prints_its_summary_and_answer() -> None:
    with FakeOpenAIServer() as server:
        server.chat.script(
            Reply(tool_calls=[ToolCall("get_weather", {"city": "Paris"})]), "Mild <b>& dry</b>."
        )
        result = await agent_on(server).run("Weather?")
    tokens = str(result.record.usage)
    assert repr(result) == (
        f"<RunResult completed: 2 steps, 1 tool call, {tokens}; output 'Mild <b>& dry</b>.'>"
    )
    assert str(result).splitlines() == [
        f"RunResult completed: 2 steps, 1 tool call, {tokens}",
        "  output: Mild <b>& dry</b>.",
    ]
    page = result._repr_html_()
    assert "<td>get_weather</td>" in page and "&lt;b&gt;&amp; dry&lt;/b&gt;" in page
    assert "<b>&" not in page
    assert result.output.content == "Mild <b>& dry</b>."  # the data, one attribute away


async def test_a_paused_run_names_the_calls_it_waits_for() -> None:
    with FakeOpenAIServer() as server:
        server.chat.script(
            Reply(tool_calls=[ToolCall("delete_file", {"path": "old.bak"}, id="call_9")])
        )
        result = await agent_on(server).run("Clean up")
    assert result.status == "needs_approval"
    assert "waiting for delete_file({'path': 'old.bak'}) [call_9]" in repr(result)
    assert str(result).splitlines()[1] == (
        "  waiting for approval: delete_file({'path': 'old.bak'}) [call_9]"
    )
    assert "<td>waiting for approval</td>" in result._repr_html_()
