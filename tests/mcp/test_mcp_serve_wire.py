"""`python -m promptimus.mcp serve` over stdio, driven through a real subprocess's pipes line by
line as a hostile or broken client would: every line that is not a message the server can take
gets its JSON-RPC error reply (-32700 parse error, -32600 invalid request, -32602 invalid
params) with the request's id whenever the line has one, and the server goes on serving."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from locations import MCP_SERVERS, REPO

from promptimus.mcp.jsonrpc_line import Refusal, read_line, refuse_long_line
from promptimus.mcp.stdio_wire import read_wire_line

TARGETS = MCP_SERVERS / "served_tools.py"
ROOT = REPO
BOUND = 60.0  # seconds to wait for one reply; generous, so a missing reply fails, never hangs
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


class Served:
    """The server process and a thread reading its stdout into a queue, line by line."""

    def __init__(self, target: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "promptimus.mcp", "serve", f"{TARGETS}:{target}"],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=BOUND)
        except queue.Empty:
            pytest.fail(f"no reply within {BOUND} s: the server left the line unanswered")
        assert line, f"the server exited: {self.stderr()}"
        return json.loads(line)  # type: ignore[no-any-return]

    def exchange(self, line: bytes) -> dict[str, Any]:
        self.send(line)
        return self.reply()

    def request(self, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        return self.exchange(json.dumps(message).encode())

    def stderr(self) -> str:
        self.process.kill()
        assert self.process.stderr is not None
        return self.process.stderr.read().decode(errors="replace")[-3000:]


@pytest.fixture
def served() -> Iterator[Served]:
    server = Served("noisy_tools")
    try:
        hello = server.request(
            1,
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "hostile", "version": "1"},
            },
        )
        assert hello["id"] == 1 and "result" in hello, hello
        server.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
        server.process.wait(BOUND)


def deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


CALL = b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": %s}'

HOSTILE: dict[str, tuple[bytes, int, Any]] = {
    "params a string": (CALL % (8, b'"str"'), INVALID_PARAMS, 8),
    "params an array": (CALL % (9, b"[1, 2]"), INVALID_PARAMS, 9),
    "not JSON": (b"this is not json", PARSE_ERROR, None),
    "cut short": (CALL % (10, b'{"name": "add", "arguments": {"a": 1}'), PARSE_ERROR, 10),
    "a JSON array": (
        b'[{"jsonrpc": "2.0", "id": 11, "method": "tools/list"}]',
        INVALID_REQUEST,
        None,
    ),
    "a JSON number": (b"42", INVALID_REQUEST, None),
    "not UTF-8": (b"\xff\xfe\x00{", PARSE_ERROR, None),
    "not UTF-8 inside a request": (
        CALL % (12, b'{"name": "add", "arguments": {"a": "\xff"}}'),
        PARSE_ERROR,
        12,
    ),
    "100,000 deep": (deep(100_000), PARSE_ERROR, None),
    "100,000 deep inside a request": (
        CALL % (13, b'{"name": "add", "arguments": {"a": ' + deep(100_000) + b"}}"),
        PARSE_ERROR,
        13,
    ),
    "a 100,000-digit number": (
        CALL % (14, b'{"name": "add", "arguments": {"a": ' + b"9" * 100_000 + b"}}"),
        PARSE_ERROR,
        14,
    ),
    "id true": (b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', INVALID_REQUEST, None),
    "id null": (b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', INVALID_REQUEST, None),
    "jsonrpc 1.0": (b'{"jsonrpc": "1.0", "id": 15, "method": "tools/list"}', INVALID_REQUEST, 15),
    "method a number": (b'{"jsonrpc": "2.0", "id": "m", "method": 5}', INVALID_REQUEST, "m"),
    "no method": (b'{"jsonrpc": "2.0", "id": 16}', INVALID_REQUEST, None),
    "a notification with bad params": (
        b'{"jsonrpc": "2.0", "method": "notifications/x", "params": 5}',
        INVALID_PARAMS,
        None,
    ),
    "a tool name that is a number": (CALL % (17, b'{"name": 5}'), INVALID_PARAMS, 17),
    "an unknown method": (
        b'{"jsonrpc": "2.0", "id": 18, "method": "no/such"}',
        METHOD_NOT_FOUND,
        18,
    ),
}


def test_every_malformed_line_gets_its_error_reply_and_serving_goes_on(served: Served) -> None:
    answers = {}
    for case, (line, _, _) in HOSTILE.items():
        answers[case] = served.exchange(line)
    for case, (_, code, request_id) in HOSTILE.items():
        answer = answers[case]
        assert answer["jsonrpc"] == "2.0" and "result" not in answer, (case, answer)
        assert (answer["error"]["code"], answer["id"]) == (code, request_id), (case, answer)
        assert answer["error"]["message"], case

    served.send(b"")  # a blank line is no message: nothing to answer
    result = served.request(99, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert result["id"] == 99 and result["result"]["content"][0]["text"] == "3"
    assert served.process.poll() is None


def test_a_tool_that_prints_or_reads_stdin_cannot_touch_the_wire(served: Served) -> None:
    result = served.request(2, "tools/call", {"name": "noisy", "arguments": {"text": "hi"}})
    assert result["result"]["content"][0]["text"] == "heard hi; stdin gave ''"
    after = served.request(3, "tools/call", {"name": "add", "arguments": {"a": 2}})
    assert after["result"]["content"][0]["text"] == "3"
    assert served.process.stdin is not None
    served.process.stdin.close()
    assert served.process.wait(BOUND) == 0
    assert served.process.stderr is not None
    assert "stray output hi" in served.process.stderr.read().decode()


@pytest.mark.parametrize("closed", ["<&-", ">&-"])
def test_serving_over_a_closed_stdin_or_stdout_is_a_named_error(closed: str) -> None:
    command = [sys.executable, "-m", "promptimus.mcp", "serve", f"{TARGETS}:tools"]
    result = subprocess.run(
        ["/bin/sh", "-c", f'exec "$@" {closed}', "sh", *command],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, timeout=BOUND,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    stream = "stdin" if closed == "<&-" else "stdout"
    assert result.stderr.decode().startswith(
        f"promptimus: error: serve over stdio needs an open {stream}"
    )
    assert b"Traceback" not in result.stderr


def test_a_line_over_the_limit_is_dropped_as_it_is_read_and_refused_with_its_id() -> None:
    read_fd, write_fd = os.pipe()
    long_line = b'{"jsonrpc": "2.0", "id": 21, "method": "tools/call", "params": "' + b"x" * 5000
    writer = threading.Thread(
        target=lambda: os.write(write_fd, long_line + b'"}\n{"jsonrpc": "2.0"}\n\n'), daemon=True
    )
    writer.start()
    with os.fdopen(read_fd, "rb") as wire:
        start, fits = read_wire_line(wire, 1000)
        assert (len(start), fits) == (1000, False)
        assert read_wire_line(wire, 1000) == (b'{"jsonrpc": "2.0"}', True)
        assert read_wire_line(wire, 1000) == (b"", True)  # a blank line is not the end
        os.close(write_fd)
        assert read_wire_line(wire, 1000) is None
    writer.join(BOUND)
    refusal = refuse_long_line(start, 1000)
    assert (refusal.reply.id, refusal.reply.error.code) == (21, PARSE_ERROR)
    assert "limit of 1000 bytes" in refusal.reply.error.message


def test_the_id_is_found_after_deep_values_and_escapes_but_not_past_a_break() -> None:
    line = b'{"params": {"a": ' + deep(5000) + b', "s": "\\"}]"}, "id": "x\\u00e9"' + b"]"
    refusal = read_line(line)
    assert isinstance(refusal, Refusal) and refusal.reply.id == "x\u00e9"
    broken = read_line(b'{"params": {"a": [}, "id": 7}')
    assert isinstance(broken, Refusal) and broken.reply.id is None
