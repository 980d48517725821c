"""A run's page shows the calls the provider's server ran (hosted tools) among its tool calls,
marked as run on the server, beside the tool that ran here."""

from __future__ import annotations

import asyncio
import html
import re
from pathlib import Path

from starlette.testclient import TestClient

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.board import record
from promptimus.board.app import BoardConfig, build_app
from promptimus.llms import OpenAIResponses
from promptimus.testing import FakeOpenAIServer, ResponsesReply, ToolCall
from promptimus.tools import HostedTool

SEARCH = {"type": "web_search_call", "action": {"type": "search", "query": "oslo <population>"}}
FAILED = {"type": "file_search_call", "status": "failed", "queries": ["census"]}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def hosted_run(path: Path) -> None:
    with FakeOpenAIServer() as srv:
        srv.responses.script(
            ResponsesReply(
                hosted_calls=[SEARCH, FAILED], tool_calls=[ToolCall("add", {"a": 1, "b": 2})]
            ),
            "About 709,000.",
        )
        llm = OpenAIResponses("o-test", api_key=srv.api_key, base_url=srv.base_url)
        tools = [
            HostedTool("web_search"),
            HostedTool("file_search", vector_store_ids=["vs_1"]),
            add,
        ]
        agent = OpenaiToolCallingAgent("Answer.", tools).with_llm(llm)
        with record(path):
            await agent.run("How many people live in Oslo?")


def rows(page: str) -> list[str]:
    tools = page.split("<h2>Tool calls</h2>", 1)[1].split("<h2>", 1)[0]
    return [
        " ".join(html.unescape(re.sub(r"<[^>]+>", " ", row)).split())
        for row in re.findall(r"<tr>(.*?)</tr>", tools, re.S)[1:]
    ]


def test_a_run_page_lists_the_server_s_calls_as_run_on_the_server(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    asyncio.run(hosted_run(path))
    with TestClient(build_app(BoardConfig(path)), base_url="http://127.0.0.1:8321") as board:
        [run_id] = re.findall(r'href="/runs/([0-9a-f]+)"', board.get("/runs").text)
        page = board.get(f"/runs/{run_id}").text

    search, failed, local = rows(page)
    assert search.startswith("web_search") and "ran on the server" in search
    assert '"query": "oslo <population>"' in search
    assert failed.startswith("file_search") and "ran on the server" in failed
    assert "file_search failed on the server (status 'failed')" in failed
    assert local.startswith("add") and "ran on the server" not in local and "3" in local
    assert "<population>" not in page  # escaped
    reply = page.split("<h3>Reply</h3>", 1)[1]
    assert "web_search" in reply.split("</details>", 1)[0]  # the reply shows the call it made
