"""Clients that leave at every point, through a real uvicorn server on a real SQLite store:
before the first byte, and while a tool runs (after the stream began). Each time the run is
cancelled (the tool is told), no run slot stays taken (`/healthz` back to 0), and the stored
conversation is as it was: the next request sees only the turns before."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui_client import post, run_input, user
from serve_support import Running, serving
from test_openai_compatible import wait_for

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.sessions import SQLiteSessionStore

S = ScriptedLLM
PATHS = ["/v1/chat/completions stream", "/v1/chat/completions", "/ag-ui"]


class SlowTool:
    """A tool that waits until the test lets it go, counting its starts and cancellations."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = 0
        self.cancelled = 0

    async def wait(self) -> str:
        """Waits a while."""
        self.started += 1
        try:
            while not self.release.is_set():  # noqa: ASYNC110 - set from the test's thread
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return "waited"


def heard(history: list[Message], kwargs: dict[str, Any]) -> str:
    return "heard: " + " | ".join(m.content for m in history if m.role == MessageRole.USER)


def script(history: list[Message], kwargs: dict[str, Any]) -> Any:
    """Calls the tool when asked to wait (and has no result yet); otherwise echoes."""
    last = history[-1]
    if last.role == MessageRole.USER and "wait" in last.content:
        return S.tool_call("wait", {}, id="w1")
    return heard(history, kwargs)


def request(path: str, conversation: str, text: str) -> bytes:
    if path == "/ag-ui":
        body = json.dumps(run_input(conversation, user(text))).encode()
        target = "/ag-ui"
    else:
        payload: dict[str, Any] = {
            "messages": [{"role": "user", "content": text}],
            "user": conversation,
        }
        if path.endswith("stream"):
            payload["stream"] = True
        body = json.dumps(payload).encode()
        target = "/v1/chat/completions"
    return (
        f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


def ask(running: Running, path: str, conversation: str, text: str) -> str:
    """The answer's text, read by a client that stays."""
    if path == "/ag-ui":
        answer = post(running.url, run_input(conversation, user(text)))
        return answer.text()
    streamed = path.endswith("stream")
    reply = httpx.post(
        f"{running.url}/v1/chat/completions",
        json={
            "messages": [{"role": "user", "content": text}],
            "user": conversation,
            "stream": streamed,
        },
        timeout=60.0,
    )
    if not streamed:
        return str(reply.json()["choices"][0]["message"]["content"])
    chunks = [
        json.loads(line[len("data: ") :])
        for line in reply.text.splitlines()
        if line.startswith("data: {")
    ]
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def runs(running: Running) -> int:
    return int(httpx.get(f"{running.url}/healthz", timeout=60.0).json()["runs"])


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteSessionStore]:
    store = SQLiteSessionStore(tmp_path / "chats.db")
    yield store
    store.close()


def served(store: SQLiteSessionStore, tool: SlowTool) -> Any:
    agent = OpenaiToolCallingAgent("You wait.", [tool.wait]).with_llm(S(script))
    return serving(app(agent, store=store))


@pytest.mark.parametrize("path", PATHS)
def test_leaving_before_the_first_byte_cancels_the_run_and_stores_nothing(
    store: SQLiteSessionStore, path: str
) -> None:
    tool = SlowTool()
    with served(store, tool) as running:
        assert ask(running, path, "c", "first") == "heard: first"
        with socket.create_connection(("127.0.0.1", running.port)) as raw:
            raw.sendall(request(path, "c", "please wait"))
            wait_for(lambda: tool.started == 1)
        wait_for(lambda: tool.cancelled == 1)
        wait_for(lambda: runs(running) == 0)
        tool.release.set()
        assert len(running.call(store.load_turns("5:local:c"))) == 1
        assert ask(running, path, "c", "next") == "heard: first | next"


@pytest.mark.parametrize("path", [p for p in PATHS if p != "/v1/chat/completions"])
def test_leaving_mid_stream_during_a_tool_cancels_it_and_stores_nothing(
    store: SQLiteSessionStore, path: str
) -> None:
    tool = SlowTool()
    with served(store, tool) as running:
        assert ask(running, path, "m", "first") == "heard: first"
        with socket.create_connection(("127.0.0.1", running.port)) as raw:
            raw.settimeout(60.0)
            raw.sendall(request(path, "m", "please wait"))
            wait_for(lambda: tool.started == 1)
            assert raw.recv(65536).startswith(b"HTTP/1.1 200")  # the stream has begun
        wait_for(lambda: tool.cancelled == 1)
        wait_for(lambda: runs(running) == 0)
        tool.release.set()
        assert len(running.call(store.load_turns("5:local:m"))) == 1
        assert ask(running, path, "m", "next") == "heard: first | next"
