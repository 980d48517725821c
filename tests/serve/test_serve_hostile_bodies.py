"""Request bodies that never end, against a real uvicorn server: whether declared by length or
sent chunked, a body that stops arriving is answered 408 in the protocol's error shape once the
server's body timeout passes, and holds no run slot while it waits."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from ag_ui.core import RunErrorEvent
from serve_support import Running, serving
from test_openai_compatible import echo_agent

from promptimus.errors import InvalidArgument
from promptimus.serve import app

HANG_GUARD = 60.0  # seconds a test waits for an answer at most (not a speed check)

HEAD = "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def answer_to_a_stalled_body(running: Running, path: str, chunked: bool) -> tuple[int, str]:
    """Sends part of a body and then nothing; returns the status and body of the answer."""
    with socket.create_connection(("127.0.0.1", running.port)) as raw:
        raw.settimeout(HANG_GUARD)
        if chunked:
            raw.sendall(
                (HEAD.format(path=path) + "Transfer-Encoding: chunked\r\n\r\n").encode()
                + b'5\r\n{"mes\r\n'
            )
        else:
            raw.sendall((HEAD.format(path=path) + "Content-Length: 100\r\n\r\n").encode() + b"{")
        received = b""
        while b"\r\n\r\n" not in received or not _complete(received):
            piece = raw.recv(65536)
            if not piece:
                break
            received += piece
    head, _, body = received.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def _complete(received: bytes) -> bool:
    head, _, body = received.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def health(running: Running) -> int:
    return int(httpx.get(f"{running.url}/healthz", timeout=HANG_GUARD).json()["runs"])


@pytest.mark.parametrize("chunked", [False, True])
def test_a_stalled_body_is_a_408_in_openais_shape_and_holds_no_slot(chunked: bool) -> None:
    with serving(app(echo_agent(), max_concurrent_runs=1, body_timeout=0.5)) as running:
        status, body = answer_to_a_stalled_body(running, "/v1/chat/completions", chunked)
        assert status == 408
        assert json.loads(body)["error"]["code"] == "request_timeout"
        assert health(running) == 0


def test_a_stalled_body_is_a_408_run_error_on_ag_ui() -> None:
    with serving(app(echo_agent(), body_timeout=0.5)) as running:
        status, body = answer_to_a_stalled_body(running, "/ag-ui", chunked=True)
    assert status == 408
    assert RunErrorEvent.model_validate_json(body).code == "request_timeout"


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "30", True])
def test_body_timeout_must_be_a_positive_number(bad: object) -> None:
    with pytest.raises(InvalidArgument, match="body_timeout"):
        app(echo_agent(), body_timeout=bad)  # type: ignore[arg-type]
