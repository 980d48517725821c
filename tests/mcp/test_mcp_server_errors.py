"""An MCP server's error reply is its answer, whatever its code or text; a lost connection is
told by what happened to the call.

Real MCP servers (tests/support/mcp_servers/small_server.py) over stdio and streamable HTTP answer
a tool call with JSON-RPC errors whose code is -32000 (the SDK's own code for a closed
connection) or whose message is what the SDK says of a gone session. Each is a tool error that
quotes the server, the tool ran once, nothing is sent again and the server keeps its state.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from locations import MCP_SERVERS
from servers import free_port

from promptimus.errors import MCPResultUnknown, ToolExecutionError
from promptimus.mcp import MCPToolset

SERVER = str(MCP_SERVERS / "small_server.py")
BOUND = 60.0
REPLIES = [
    (-32000, "database is locked"),
    (-32000, "Connection closed"),
    (-32600, "Session not found"),
    (-32600, "Session terminated"),
    (-32603, "Session not found"),
]


def listening(process: subprocess.Popen[bytes], port: int) -> bool:
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert listening(process, port), "the test MCP server did not listen"
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@asynccontextmanager
async def opened(transport: str, url: str) -> AsyncIterator[MCPToolset]:
    if transport == "stdio":
        toolset = MCPToolset.stdio(sys.executable, [SERVER], idempotent=True)
    else:
        toolset = MCPToolset.http(url, idempotent=True)
    async with toolset:
        yield toolset


def runs(tally: Path) -> int:
    return len(tally.read_text().splitlines()) if tally.exists() else 0


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(("code", "message"), REPLIES)
async def test_a_servers_error_reply_is_its_answer_whatever_it_says(
    transport: str, code: int, message: str, http_url: str, tmp_path: Path
) -> None:
    tally = tmp_path / "tally.txt"
    async with opened(transport, http_url) as toolset:
        before = json.loads(await toolset.tool("count").call({}))["result"]
        generation = toolset._generation
        call = toolset.tool("answer_error").call(
            {"code": code, "message": message, "path": str(tally)}
        )
        with pytest.raises(ToolExecutionError) as raised:
            await asyncio.wait_for(call, BOUND)
        assert not isinstance(raised.value, MCPResultUnknown)
        assert f"was refused: {message}" in str(raised.value)
        assert runs(tally) == 1  # not sent again, though the tool is marked idempotent
        after = json.loads(await toolset.tool("count").call({}))["result"]
        assert toolset._generation == generation  # no reconnect, no restart
    assert int(after.split()[-1]) == int(before.split()[-1]) + 1  # the server kept its state
