"""Wrong-shaped Anthropic replies, through the real anthropic SDK against the fake Messages API
server: each is a `MalformedReply` naming the field (never a raw KeyError, TypeError or
validation error), and an error object inside a 200 is an `ErrorInReply` quoting the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.errors import ErrorInReply, MalformedReply
from promptimus.llms import Anthropic, aaccumulate
from promptimus.testing import FakeAnthropicServer, Fault
from promptimus.transport import RetryPolicy


@pytest.fixture
def srv() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


async def _no_wait(_: float) -> None:
    return None


def make_llm(srv: FakeAnthropicServer) -> Anthropic:
    retry = RetryPolicy(max_retries=2, sleep=_no_wait)
    return Anthropic("claude-test", api_key=srv.api_key, base_url=srv.base_url, retry=retry)


def ask() -> list[Message]:
    return [Message(role=MessageRole.USER, content="hi")]


def sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )


def reply(*blocks: dict[str, Any], usage: Any = None) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(blocks) or [{"type": "text", "text": "fine"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1} if usage is None else usage,
    }


def stream(*middle: dict[str, Any], start_usage: Any = None) -> list[dict[str, Any]]:
    message = {**reply(), "content": [], "stop_reason": None}
    message["usage"] = (
        {"input_tokens": 3, "output_tokens": 0} if start_usage is None else start_usage
    )
    return [
        {"type": "message_start", "message": message},
        *middle,
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]


def start(index: Any, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: Any, body: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


TEXT = {"type": "text", "text": ""}
SAID = delta(0, {"type": "text_delta", "text": "fine"})
TOOL = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}
THINK = {"type": "thinking", "thinking": "", "signature": ""}

# (id, the body a plain request gets, the events a stream gets, what the error names)
SHAPES: list[tuple[str, dict[str, Any] | None, list[dict[str, Any]] | None, str]] = [
    (
        "input_json_delta_on_text",
        None,
        stream(start(0, TEXT), SAID, delta(0, {"type": "input_json_delta", "partial_json": "{"})),
        "input_json_delta",
    ),
    (
        "list_index",
        None,
        stream(start(0, TEXT), SAID, {"type": "content_block_stop", "index": [0]}),
        "index",
    ),
    ("usage_text", reply(usage="many"), stream(start(0, TEXT), SAID, start_usage="many"), "usage"),
    ("usage_list", reply(usage=[1, 2]), stream(start(0, TEXT), SAID, start_usage=[1]), "usage"),
    (
        "late_usage_text",
        None,
        [*stream(start(0, TEXT), SAID)[:-2], {"type": "message_delta", "delta": {}, "usage": "x"}],
        "usage",
    ),
    ("tool_id_number", reply({**TOOL, "id": 5}), stream(start(0, {**TOOL, "id": 5})), "id"),
    ("tool_name_number", reply({**TOOL, "name": 5}), stream(start(0, {**TOOL, "name": 5})), "name"),
    (
        "signature_number",
        reply({**THINK, "thinking": "hm", "signature": 5}, {"type": "text", "text": "ok"}),
        stream(
            start(0, {**THINK, "signature": 5}),
            delta(0, {"type": "signature_delta", "signature": "s"}),
        ),
        "signature",
    ),
    (
        "thinking_number",
        reply({**THINK, "thinking": 5}, {"type": "text", "text": "ok"}),
        stream(
            start(0, {**THINK, "thinking": 5}),
            delta(0, {"type": "thinking_delta", "thinking": "a"}),
        ),
        "thinking",
    ),
    (
        "text_number",
        reply({"type": "text", "text": 5}),
        stream(start(0, {"type": "text", "text": 5})),
        "text",
    ),
    (
        "text_delta_number",
        None,
        stream(start(0, TEXT), delta(0, {"type": "text_delta", "text": 5})),
        "text",
    ),
    (
        "block_without_type",
        reply({"text": "fine"}),
        stream(start(0, {"text": ""}), SAID, {"type": "content_block_stop", "index": 0}),
        "type",
    ),
    (
        "stop_without_start",
        None,
        stream({"type": "content_block_stop", "index": "zero"}),
        "index",
    ),
]

PLAIN = [(name, body, named) for name, body, _, named in SHAPES if body is not None]
STREAMED = [(name, events, named) for name, _, events, named in SHAPES if events is not None]


@pytest.mark.parametrize(("name", "body", "named"), PLAIN, ids=[s[0] for s in PLAIN])
async def test_a_wrong_shaped_reply_is_malformed_and_names_the_field(
    srv: FakeAnthropicServer, name: str, body: dict[str, Any], named: str
) -> None:
    srv.messages.script(*[Fault.raw(json.dumps(body).encode())] * 3)
    with pytest.raises(MalformedReply) as info:
        await make_llm(srv).achat(ask())
    assert named in info.value.problem
    assert len(srv.messages.requests) == 2  # retried once, then raised


@pytest.mark.parametrize(("name", "events", "named"), STREAMED, ids=[s[0] for s in STREAMED])
async def test_a_wrong_shaped_stream_is_malformed_and_names_the_field(
    srv: FakeAnthropicServer, name: str, events: list[dict[str, Any]], named: str
) -> None:
    srv.messages.script(*[Fault.raw(sse(events), "text/event-stream")] * 3)
    with pytest.raises(MalformedReply) as info:
        await aaccumulate(make_llm(srv).astream(ask()))
    assert named in info.value.problem


async def test_an_error_object_in_a_200_quotes_the_server(srv: FakeAnthropicServer) -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded now"}}
    srv.messages.script(*[Fault.raw(json.dumps(body).encode())] * 3)
    with pytest.raises(ErrorInReply) as info:
        await make_llm(srv).achat(ask())
    assert "Overloaded now" in str(info.value) and "overloaded_error" in str(info.value)
