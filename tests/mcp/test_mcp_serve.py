"""`promptimus.mcp.serve`: modules and tools served over MCP, checked with the `mcp` SDK's own
client over stdio (a subprocess) and streamable HTTP (127.0.0.1)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from typing import Any

import pytest
from locations import MCP_SERVERS, REPO
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from promptimus.errors import MCPError
from promptimus.mcp import MCPToolset
from promptimus.mcp.serve import served_tools
from promptimus.testing import FakeOpenAIServer

TARGETS = MCP_SERVERS / "served_tools.py"
ROOT = REPO
BOUND = 60.0


def serve_args(obj: str, *extra: str) -> list[str]:
    return ["-m", "promptimus.mcp", "serve", f"{TARGETS}:{obj}", *extra]


def start_served(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


async def with_stdio_session(obj: str, body: Any) -> Any:
    params = StdioServerParameters(command=sys.executable, args=serve_args(obj), cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await body(session)


async def test_tools_served_over_stdio_answer_the_sdk_client() -> None:
    async def body(session: ClientSession) -> Any:
        listed = await session.list_tools()
        ok = await session.call_tool("add", {"a": 2, "b": 40})
        bad_args = await session.call_tool("add", {"a": "x"})
        failed = await session.call_tool("fail", {"reason": "why"})
        unknown = await session.call_tool("nope", {})
        return listed, ok, bad_args, failed, unknown

    listed, ok, bad_args, failed, unknown = await asyncio.wait_for(
        with_stdio_session("tools", body), BOUND
    )
    by_name = {t.name: t for t in listed.tools}
    assert set(by_name) == {"add", "fail"}
    assert by_name["add"].description == "Add two numbers."
    assert by_name["add"].input_schema["required"] == ["a"]
    assert not ok.is_error and ok.content[0].text == "42"
    assert bad_args.is_error and "'add'" in bad_args.content[0].text
    assert failed.is_error and "broken: why" in failed.content[0].text
    assert unknown.is_error and "no tool named 'nope'" in unknown.content[0].text


async def test_a_module_served_over_http_answers_the_sdk_client() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    process = start_served(serve_args("greeter", "--http", "--port", str(port)))
    try:
        deadline = time.monotonic() + BOUND
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                await asyncio.sleep(0.1)
        assert process.poll() is None, "the served module exited"
        url = f"http://127.0.0.1:{port}/mcp"

        async def talk() -> Any:
            async with (
                streamable_http_client(url) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                await session.initialize()
                listed = await session.list_tools()
                answer = await session.call_tool("greeter", {"name": "Ada"})
                return listed, answer

        listed, answer = await asyncio.wait_for(talk(), BOUND)
        assert [t.name for t in listed.tools] == ["greeter"]
        assert listed.tools[0].input_schema["required"] == ["name"]
        assert answer.content[0].text == "Hello, Ada!"
        # and promptimus' own client reads it too
        async with MCPToolset.http(url) as toolset:
            assert await toolset.tool("greeter").call({"name": "Bo"}) == "Hello, Bo!"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


async def test_a_mapping_names_the_tools() -> None:
    async with MCPToolset.stdio(sys.executable, serve_args("named"), cwd=str(ROOT)) as toolset:
        assert set(toolset.tools) == {"hello"}
        assert await toolset.tool("hello").call({"name": "Cy"}) == "Hello, Cy!"


def test_bad_targets_are_mcp_errors() -> None:
    with pytest.raises(MCPError, match="not a Module"):
        served_tools({"x": 3})  # type: ignore[dict-item]
    with pytest.raises(MCPError, match="serve needs"):
        served_tools(42)  # type: ignore[arg-type]


def test_cli_reports_a_missing_file() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "promptimus.mcp", "serve", "no/such/file.py:x"],
        capture_output=True,
        text=True,
        timeout=BOUND,
        cwd=ROOT,
    )
    assert result.returncode == 2 and "No file 'no/such/file.py'" in result.stderr


def test_the_mcp_example_runs() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "mcp_tools.py")],
        capture_output=True,
        text=True,
        timeout=BOUND * 2,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "units_convert" in result.stdout and "-> 69.8" in result.stdout


def test_promptimus_mcp_serve_command_reports_a_missing_object() -> None:
    from promptimus.cli.main import main

    assert main(["mcp", "serve", f"{TARGETS}:nothing_here"]) == 2


async def test_promptimus_mcp_serve_command_serves_over_stdio() -> None:
    code = "import sys; from promptimus.cli.main import main; sys.exit(main(sys.argv[1:]))"
    args = ["-c", code, "mcp", "serve", f"{TARGETS}:tools"]
    async with MCPToolset.stdio(sys.executable, args, cwd=str(ROOT)) as toolset:
        assert await toolset.tool("add").call({"a": 1, "b": 2}) == "3"


# --- every call in its own pm.Session ------------------------------------------------------------

CHAT = MCP_SERVERS / "served_chat.py"


async def with_served_chat(obj: str, srv: FakeOpenAIServer, body: Any) -> Any:
    env = {
        **os.environ,
        "FAKE_OPENAI_BASE_URL": srv.base_url,
        "FAKE_OPENAI_API_KEY": srv.api_key,
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "promptimus.mcp", "serve", f"{CHAT}:{obj}"],
        cwd=str(ROOT),
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await body(session)


def user_turns(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


async def test_each_call_to_a_served_module_has_its_own_conversation(
    fake_openai: FakeOpenAIServer,
) -> None:
    async def body(session: ClientSession) -> list[str]:
        first = await session.call_tool("chat", {"message": "my name is Ada"})
        second = await session.call_tool("chat", {"message": "what is my name?"})
        return [first.content[0].text, second.content[0].text]

    answers = await asyncio.wait_for(with_served_chat("chat", fake_openai, body), BOUND)
    assert answers == ["echo: my name is Ada", "echo: what is my name?"]
    first, second = fake_openai.chat.requests
    assert user_turns(first) == ["my name is Ada"]
    assert user_turns(second) == ["what is my name?"]  # the first call's memory is not seen


async def test_concurrent_calls_to_a_served_module_never_share_memory(
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.latency = 0.5  # both requests are in flight at once

    async def body(session: ClientSession) -> list[str]:
        said = [f"message {i}" for i in range(4)]
        results = await asyncio.gather(
            *(session.call_tool("chat", {"message": text}) for text in said)
        )
        return [result.content[0].text for result in results]

    answers = await asyncio.wait_for(with_served_chat("chat", fake_openai, body), BOUND)
    assert answers == [f"echo: message {i}" for i in range(4)]
    assert fake_openai.max_in_flight >= 2
    turns = sorted(tuple(user_turns(request)) for request in fake_openai.chat.requests)
    assert turns == [(f"message {i}",) for i in range(4)]


async def test_each_call_to_a_served_function_tool_is_a_new_session(
    fake_openai: FakeOpenAIServer,
) -> None:
    async def body(session: ClientSession) -> list[str]:
        one = await session.call_tool("visits", {})
        two = await session.call_tool("visits", {})
        both = await asyncio.gather(
            session.call_tool("visits", {}), session.call_tool("visits", {})
        )
        return [r.content[0].text for r in (one, two, *both)]

    answers = await asyncio.wait_for(with_served_chat("tools", fake_openai, body), BOUND)
    assert answers == ["visit 1"] * 4


async def test_a_served_tool_returning_images_answers_with_image_content() -> None:
    from mcp_servers.served_tools import PICTURE

    async def body(session: ClientSession) -> Any:
        return await session.call_tool("picture", {})

    raw = await asyncio.wait_for(with_stdio_session("pictures", body), BOUND)
    text, image = raw.content
    assert text.text == "a picture"
    assert image.type == "image" and image.mime_type == "image/png"
    assert PICTURE.url == f"data:image/png;base64,{image.data}"
    # and promptimus' own client turns it back into the same ImageContent
    async with MCPToolset.stdio(sys.executable, serve_args("pictures"), cwd=str(ROOT)) as toolset:
        result = await toolset.tool("picture").forward()
    assert result.images == [PICTURE]
    assert result.content == "a picture\n[image 1 (image/png)]"
