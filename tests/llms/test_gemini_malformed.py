"""Wrong-shaped Gemini replies, through the real google-genai SDK against the fake Gemini
server: each is a `MalformedReply` naming the field (never a raw ValueError or TypeError), and
an error object inside a 200 is an `ErrorInReply` quoting the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.errors import ErrorInReply, MalformedReply, RequestRejected
from promptimus.llms import Gemini, aaccumulate
from promptimus.testing import FakeGeminiServer, GeminiFault
from promptimus.transport import RetryPolicy


@pytest.fixture
def srv() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer() as server:
        yield server


async def _no_wait(_: float) -> None:
    return None


def make_llm(srv: FakeGeminiServer) -> Gemini:
    retry = RetryPolicy(max_retries=2, sleep=_no_wait)
    return Gemini("gemini-3-pro", api_key=srv.api_key, base_url=srv.base_url, retry=retry)


def ask() -> list[Message]:
    return [Message(role=MessageRole.USER, content="hi")]


def chunk(text: str = "fine", finish: str | None = "STOP", **extra: Any) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-3-pro", **extra}


def sse(*events: Any) -> bytes:
    return b"".join(f"data: {json.dumps(event)}\r\n\r\n".encode() for event in events)


SUPERSCRIPT = chunk(usageMetadata={"promptTokenCount": "²", "candidatesTokenCount": 1})

# (id, a plain request's body, a stream request's events, what the error names)
SHAPES: list[tuple[str, Any, list[Any] | None, str]] = [
    ("usage_superscript", SUPERSCRIPT, [SUPERSCRIPT], "promptTokenCount"),
    (
        "stream_error_text",
        None,
        [chunk("so far", None), {"error": "the model overloaded"}],
        "error",
    ),
    (
        "stream_error_code_text",
        None,
        [chunk("so far", None), {"error": {"code": "busy", "message": "try later"}}],
        "code",
    ),
]


@pytest.mark.parametrize(
    ("name", "body", "named"),
    [(n, b, w) for n, b, _, w in SHAPES if b is not None],
    ids=[n for n, b, _, _ in SHAPES if b is not None],
)
async def test_a_wrong_shaped_reply_is_malformed_and_names_the_field(
    srv: FakeGeminiServer, name: str, body: Any, named: str
) -> None:
    srv.generate.script(*[GeminiFault.raw(json.dumps(body).encode())] * 3)
    with pytest.raises(MalformedReply) as info:
        await make_llm(srv).achat(ask())
    assert named in info.value.problem
    assert len(srv.generate.requests) == 2  # retried once, then raised


@pytest.mark.parametrize(
    ("name", "events", "named"),
    [(n, e, w) for n, _, e, w in SHAPES if e is not None],
    ids=[n for n, _, e, _ in SHAPES if e is not None],
)
async def test_a_wrong_shaped_stream_is_malformed_and_names_the_field(
    srv: FakeGeminiServer, name: str, events: list[Any], named: str
) -> None:
    srv.generate.script(*[GeminiFault.raw(sse(*events))] * 3)
    with pytest.raises(MalformedReply) as info:
        await aaccumulate(make_llm(srv).astream(ask()))
    assert named in info.value.problem


@pytest.mark.parametrize("stream", [False, True])
async def test_field_violations_that_are_not_a_list_are_named(
    srv: FakeGeminiServer, stream: bool
) -> None:
    body = {
        "error": {
            "code": 400,
            "message": "Invalid value at 'generation_config'",
            "status": "INVALID_ARGUMENT",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": 5}
            ],
        }
    }
    srv.generate.script(*[GeminiFault.raw(json.dumps(body).encode(), status=400)] * 3)
    llm = make_llm(srv)
    with pytest.raises(MalformedReply) as info:
        if stream:
            await aaccumulate(llm.astream(ask()))
        else:
            await llm.achat(ask())
    assert "fieldViolations" in info.value.problem
    assert "Invalid value at 'generation_config'" in str(info.value)  # the server's words kept


async def test_an_error_object_in_a_200_quotes_the_server(srv: FakeGeminiServer) -> None:
    error = {"error": {"code": 503, "message": "The model is overloaded", "status": "UNAVAILABLE"}}
    srv.generate.script(*[GeminiFault.raw(json.dumps(error).encode())] * 3)
    with pytest.raises(ErrorInReply) as info:
        await make_llm(srv).achat(ask())
    assert "The model is overloaded" in str(info.value) and "503" in str(info.value)


async def test_an_error_event_in_a_stream_quotes_the_server(srv: FakeGeminiServer) -> None:
    """Gemini reports a failure mid-stream as an error event: it is the status it names."""
    error = {"error": {"code": 400, "message": "Bad schema here", "status": "INVALID_ARGUMENT"}}
    srv.generate.script(*[GeminiFault.raw(sse(chunk("so far", None), error))] * 3)
    with pytest.raises(RequestRejected, match="Bad schema here"):
        await aaccumulate(make_llm(srv).astream(ask()))
