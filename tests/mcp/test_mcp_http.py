"""MCP tools over streamable HTTP (the test server on 127.0.0.1), the ReACT agent, and a server
that goes away between calls."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_llm import make_llm
from locations import MCP_SERVERS

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.errors import MCPError, MCPResultUnknown, ToolExecutionError
from promptimus.mcp import MCPToolset
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall

SERVER = str(MCP_SERVERS / "small_server.py")
BOUND = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_http_server(port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the test MCP server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
        except OSError:
            time.sleep(0.1)
            continue
        time.sleep(0.2)  # a server that could not bind the port exits at once: not ready
        if process.poll() is None:
            return process
    process.kill()
    raise RuntimeError("the test MCP server did not listen in time")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


@pytest.fixture
def http_server() -> Iterator[tuple[str, int]]:
    port = free_port()
    process = start_http_server(port)
    try:
        yield f"http://127.0.0.1:{port}/mcp", port
    finally:
        stop(process)


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


async def test_http_toolset_lists_and_calls(http_server: tuple[str, int]) -> None:
    url, _ = http_server
    async with MCPToolset.http(url, headers={"X-Test": "1"}, prefix="h_") as toolset:
        assert {"h_add", "h_count"} <= set(toolset.tools)
        add = toolset.tool("h_add")
        assert json.loads(await add.call({"a": 2, "b": 5})) == {"result": 7}
        count = toolset.tool("h_count")
        got = [json.loads(await count.call({}))["result"] for _ in range(2)]
    assert got == ["call 1", "call 2"]


async def test_react_agent_uses_http_mcp_tools(
    http_server: tuple[str, int], srv: FakeOpenAIServer
) -> None:
    url, _ = http_server
    srv.chat.script(
        'Thought: add them\nAction: add\nAction Input: {"a": 20, "b": 22}',
        "Thought: I know\nAnswer: 42",
    )
    async with MCPToolset.http(url, include=["add"]) as toolset:
        agent = ToolCallingAgent([toolset]).with_llm(make_llm(srv))
        reply = await asyncio.wait_for(agent.forward("20+22?"), BOUND)
    assert reply.content == "42"
    first = json.dumps(srv.chat.requests[0]["messages"])
    assert "Add two integers." in first
    observation = srv.chat.requests[1]["messages"][-1]["content"]
    assert observation.startswith("Observation:")
    assert json.loads(observation.removeprefix("Observation:")) == {"result": 42}


async def test_http_server_restarted_between_calls_reconnects_once() -> None:
    port = free_port()
    processes = [start_http_server(port)]
    try:
        async with MCPToolset.http(f"http://127.0.0.1:{port}/mcp") as toolset:
            count = toolset.tool("count")
            assert json.loads(await count.call({}))["result"] == "call 1"
            assert json.loads(await count.call({}))["result"] == "call 2"
            # the server goes away and a fresh one (new state) takes its place on the same port
            await asyncio.to_thread(stop, processes[0])
            processes.append(await asyncio.to_thread(start_http_server, port))
            again = await asyncio.wait_for(count.call({}), BOUND)
            assert json.loads(again)["result"] == "call 1"
    finally:
        for process in processes:
            stop(process)


async def test_stdio_server_that_dies_between_calls_is_restarted_once() -> None:
    async with MCPToolset.stdio(sys.executable, [SERVER]) as toolset:
        count = toolset.tool("count")
        assert json.loads(await count.call({}))["result"] == "call 1"
        with pytest.raises(MCPResultUnknown, match="whether the tool ran is unknown"):
            await asyncio.wait_for(toolset.tool("die").call({}), BOUND)
        assert json.loads(await asyncio.wait_for(count.call({}), BOUND))["result"] == "call 1"


def process_gone(pid: int) -> bool:
    """Whether the process has ended, every thread of it (a zombie waiting to be reaped counts
    as gone). Its main thread alone shows as a zombie while other threads are still on their
    way out, and one of those can still read its stdin: the request would then be read by a
    dying server, and whether the tool ran would truly be unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        threads = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X") and len(threads) <= 1


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
async def test_a_stdio_server_that_died_before_the_call_is_restarted_every_time() -> None:
    # The outcome is decided by what happened to the request, not by how long the client took
    # to notice the death: waiting with the event loop blocked (it has not seen the pipes
    # close) and waiting with it running (it has) must both reconnect and send the call.
    for blocked_wait in (True, False, True, False):
        async with MCPToolset.stdio(sys.executable, [SERVER]) as toolset:
            count = toolset.tool("count")
            assert json.loads(await count.call({}))["result"] == "call 1"
            pid = json.loads(await toolset.tool("pid").call({}))["result"]
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + BOUND
            while not process_gone(pid) and time.monotonic() < deadline:
                if blocked_wait:
                    time.sleep(0.01)  # noqa: ASYNC251 - the point: the loop does not run
                else:
                    await asyncio.sleep(0.01)
            assert process_gone(pid)
            again = await asyncio.wait_for(count.call({}), BOUND)
            assert json.loads(again)["result"] == "call 1"  # a fresh server process


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc (Linux)")
async def test_a_call_a_dead_servers_pipe_took_but_nobody_read_is_sent_again() -> None:
    # A killed server shows as exited while its last thread may still hold its pipes (on a busy
    # machine, long enough for the next call to be written into its stdin). Here a process the
    # server started holds them, without reading, until the call's bytes arrive, then exits.
    # The bytes were taken by the pipe but never read: the call is sent again, not "unknown".
    async with MCPToolset.stdio(sys.executable, [SERVER]) as toolset:
        count = toolset.tool("count")
        assert json.loads(await count.call({}))["result"] == "call 1"
        pid = json.loads(await toolset.tool("pid").call({}))["result"]
        holder = json.loads(await toolset.tool("hold_pipes").call({}))["result"]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + BOUND
        while not process_gone(pid) and time.monotonic() < deadline:  # noqa: ASYNC110 - /proc signals nothing
            await asyncio.sleep(0.01)
        assert process_gone(pid) and not process_gone(holder)
        again = await asyncio.wait_for(count.call({}), BOUND)
        assert json.loads(again)["result"] == "call 1"  # a fresh server process
        assert process_gone(holder)  # it saw the call arrive and left without reading it


async def test_an_idempotent_tool_cut_off_after_sending_is_sent_again_once(
    tmp_path: Path, srv: FakeOpenAIServer
) -> None:
    tally = tmp_path / "tally.txt"
    srv.chat.script(
        Reply(tool_calls=[ToolCall("tally_then_die_once", {"path": str(tally)}, id="c1")]),
        Reply(content="done"),
    )
    async with MCPToolset.stdio(
        sys.executable, [SERVER], include=["tally_then_die_once"], idempotent=True
    ) as ts:
        assert ts.tool("tally_then_die_once").idempotent
        agent = OpenaiToolCallingAgent("Use tools.", [ts]).with_llm(make_llm(srv))
        output, record = await asyncio.wait_for(agent.run("go"), BOUND)
    assert output.content == "done"
    assert runs(tally) == 2  # lost after it ran once, sent again over a fresh connection
    (call,) = record.tool_calls
    assert call.error is None and json.loads(call.result or "")["result"] == "ran 2 times"


async def test_an_idempotent_tool_lost_twice_is_unknown_and_says_it_was_sent_again(
    tmp_path: Path,
) -> None:
    tally = tmp_path / "tally.txt"
    async with MCPToolset.stdio(sys.executable, [SERVER], idempotent=["tally_then_die"]) as ts:
        assert ts.tool("tally_then_die").idempotent and not ts.tool("count").idempotent
        with pytest.raises(MCPResultUnknown, match="sent again once") as caught:
            await asyncio.wait_for(ts.tool("tally_then_die").call({"path": str(tally)}), BOUND)
    assert runs(tally) == 2 and "'tally_then_die'" in str(caught.value)


async def test_idempotence_comes_from_the_servers_annotations() -> None:
    async with MCPToolset.stdio(sys.executable, [SERVER]) as ts:
        hinted = {name for name, tool in ts.tools.items() if tool.idempotent}
    assert hinted == {"add", "weather"}  # idempotentHint, readOnlyHint; none by default
    async with MCPToolset.stdio(sys.executable, [SERVER], idempotent=False) as ts:
        assert not any(tool.idempotent for tool in ts.tools.values())


def runs(tally: Path) -> int:
    return len(tally.read_text().splitlines()) if tally.exists() else 0


async def test_a_call_cut_off_after_sending_runs_once_and_the_next_call_reconnects(
    tmp_path: Path, srv: FakeOpenAIServer
) -> None:
    tally = tmp_path / "tally.txt"
    srv.chat.script(
        Reply(tool_calls=[ToolCall("tally_then_die", {"path": str(tally)}, id="c1")]),
        Reply(tool_calls=[ToolCall("count", {}, id="c2")]),
        Reply(content="done"),
    )
    async with MCPToolset.stdio(
        sys.executable, [SERVER], include=["tally_then_die", "count"]
    ) as ts:
        agent = OpenaiToolCallingAgent("Use tools.", [ts]).with_llm(make_llm(srv))
        output, record = await asyncio.wait_for(agent.run("go"), BOUND)

    assert output.content == "done"
    assert runs(tally) == 1  # never sent again: the tool may not be safe to repeat
    lost, counted = record.tool_calls
    assert lost.error is not None and "whether the tool ran is unknown" in lost.error
    assert "'tally_then_die'" in lost.error
    assert json.loads(counted.result or "")["result"] == "call 1"  # a fresh server process
    sent_back = srv.chat.requests[1]["messages"][-1]
    assert sent_back["role"] == "tool" and "unknown" in sent_back["content"]


async def test_http_call_cut_off_after_sending_is_not_repeated(tmp_path: Path) -> None:
    tally = tmp_path / "tally.txt"
    port = free_port()
    processes = [start_http_server(port)]
    try:
        async with MCPToolset.http(f"http://127.0.0.1:{port}/mcp") as toolset:
            assert json.loads(await toolset.tool("count").call({}))["result"] == "call 1"
            with pytest.raises(MCPResultUnknown) as caught:
                await asyncio.wait_for(
                    toolset.tool("tally_then_die").call({"path": str(tally)}), BOUND
                )
            assert isinstance(caught.value, ToolExecutionError)  # the model is told
            assert runs(tally) == 1
            # the old process has ended (its listening socket too) before a new one takes the port
            await asyncio.to_thread(processes[0].wait, BOUND)
            processes.append(await asyncio.to_thread(start_http_server, port))
            again = await asyncio.wait_for(toolset.tool("count").call({}), BOUND)
            assert json.loads(again)["result"] == "call 1"
            assert runs(tally) == 1
    finally:
        for process in processes:
            stop(process)


async def test_http_server_that_is_gone_fails_with_a_named_error() -> None:
    port = free_port()
    process = start_http_server(port)
    toolset = MCPToolset.http(f"http://127.0.0.1:{port}/mcp")
    await toolset.open()
    try:
        stop(process)
        with pytest.raises(MCPError, match="went away"):
            await asyncio.wait_for(toolset.tool("add").call({"a": 1, "b": 1}), BOUND)
    finally:
        await asyncio.wait_for(toolset.close(), BOUND)


async def test_unreachable_http_server_is_an_mcp_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(MCPError, match="Could not connect"):
        await asyncio.wait_for(MCPToolset.http(url).open(), BOUND)


async def test_a_secret_in_the_server_url_never_reaches_the_model_or_a_repr(
    http_server: tuple[str, int], srv: FakeOpenAIServer, tmp_path: Path
) -> None:
    # Hosted MCP servers often take their key in the URL's query; the toolset's errors go back
    # to the model (a third party) as tool errors, and its repr ends up in logs.
    url, _ = http_server
    secret = "sk-mcp-url-secret-0042"
    srv.chat.script(
        Reply(tool_calls=[ToolCall("tally_then_die", {"path": str(tmp_path / "t")}, id="c1")]),
        Reply(content="done"),
    )
    toolset = MCPToolset.http(f"{url}?api_key={secret}", include=["tally_then_die"])
    async with toolset:
        agent = OpenaiToolCallingAgent("Use tools.", [toolset]).with_llm(make_llm(srv))
        shown = [repr(toolset), repr(agent)]
        output, record = await asyncio.wait_for(agent.run("go"), BOUND)

    assert output.content == "done"
    (lost,) = record.tool_calls
    assert lost.error is not None and "whether the tool ran is unknown" in lost.error
    assert "127.0.0.1" in lost.error  # the server is still named
    assert secret not in lost.error
    assert secret not in json.dumps(srv.chat.requests)
    assert not any(secret in text for text in shown)
