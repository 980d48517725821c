"""Anthropic's wire as a hostile or odd server speaks it, through the real anthropic SDK against
the fake Messages API server: where a stream ends, what a wrong-shaped reply or request option
becomes, and what a missing SDK says."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.errors import OptionalDependencyMissing
from promptimus.llms import Anthropic, aaccumulate
from promptimus.testing import FakeAnthropicServer, Fault
from promptimus.transport import RetryPolicy


@pytest.fixture
def srv() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


async def _no_wait(_: float) -> None:
    return None


def make_llm(srv: FakeAnthropicServer, **kwargs: Any) -> Anthropic:
    kwargs.setdefault("retry", RetryPolicy(max_retries=2, sleep=_no_wait))
    return Anthropic("claude-test", api_key=srv.api_key, base_url=srv.base_url, **kwargs)


def ask(text: str = "hi") -> list[Message]:
    return [Message(role=MessageRole.USER, content=text)]


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(
        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events
    )


def message_events(text: str = "done") -> list[dict[str, Any]]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 3, "output_tokens": 0},
    }
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]


# --- where a stream ends -------------------------------------------------------------------------


async def test_a_stream_ends_at_message_stop_whatever_follows(srv: FakeAnthropicServer) -> None:
    """A server that goes on after ``message_stop`` (pings, or here an error event) is not read
    further: the reply is whole at ``message_stop``."""
    after = [{"type": "ping"}] * 3 + [
        {"type": "error", "error": {"type": "invalid_request_error", "message": "late"}}
    ]
    srv.messages.script(Fault.raw(sse(*message_events("done"), *after)))
    reply = await aaccumulate(make_llm(srv).astream(ask()))
    assert reply.content == "done"
    assert reply.finish_reason == "stop"


async def test_a_stream_that_pings_after_message_stop_is_over_at_message_stop(
    srv: FakeAnthropicServer,
) -> None:
    """The fake sends the whole reply and then holds the connection open; the provider has no
    timeout, so only ``message_stop`` can end the stream (``wait_for`` only keeps a broken build
    from hanging the suite)."""
    srv.messages.script(Fault.stall(after_chunks=1000))
    reply = await asyncio.wait_for(aaccumulate(make_llm(srv, timeout=None).astream(ask("x"))), 60)
    assert reply.content == "echo: x"


# --- without the SDK ----------------------------------------------------------------------------


async def test_without_the_anthropic_sdk_a_call_says_what_to_install(
    srv: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if it were not installed
    llm = make_llm(srv)
    for call in (lambda: llm.achat(ask()), lambda: aaccumulate(llm.astream(ask()))):
        with pytest.raises(
            OptionalDependencyMissing, match=r"pip install 'promptimus\[anthropic\]'"
        ):
            await call()
    assert srv.messages.requests == []
