"""Encrypted reasoning the server can no longer read (its keys changed: an organisation or
project change, a zero-data-retention switch) is answered 400 invalid_encrypted_content. The
provider sends the conversation once more without those reasoning items, and does not send them
again: one extra request, not an error loop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.errors import RequestRejected
from promptimus.llms import OpenAIResponses, aaccumulate
from promptimus.testing import FakeOpenAIServer, Fault, ResponsesReply, ToolCall


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def make_llm(srv: FakeOpenAIServer) -> OpenAIResponses:
    return OpenAIResponses(
        "o-test", api_key=srv.api_key, base_url=srv.base_url, reasoning_summary="auto"
    )


def user(text: str) -> Message:
    return Message(role=MessageRole.USER, content=text)


def kinds(request: dict[str, Any]) -> list[str]:
    return [item.get("type", item.get("role")) for item in request["input"]]


async def a_tool_step(srv: FakeOpenAIServer, llm: OpenAIResponses) -> list[Message]:
    srv.responses.script(ResponsesReply(reasoning="Add.", tool_calls=[ToolCall("add", {"a": 1})]))
    reply = await llm.achat([user("add")])
    assert reply.thinking and reply.thinking[0].redacted  # encrypted reasoning came back
    assert reply.tool_calls is not None
    result = Message(role=MessageRole.TOOL, content="1", tool_call_id=reply.tool_calls[0].id)
    return [user("add"), reply, result]


@pytest.mark.parametrize("streamed", [False, True])
async def test_refused_reasoning_is_dropped_once_and_not_sent_again(
    srv: FakeOpenAIServer, streamed: bool
) -> None:
    llm = make_llm(srv)
    history = await a_tool_step(srv, llm)
    srv.responses.rotate_keys()  # what the server encrypted before, it can no longer read
    srv.responses.script("It is 1.", "Still 1.")

    if streamed:
        reply = await aaccumulate(llm.astream(history))
    else:
        reply = await llm.achat(history)
    assert reply.content == "It is 1."
    refused, resent = srv.responses.requests[1:]
    assert kinds(refused) == ["user", "reasoning", "function_call", "function_call_output"]
    assert kinds(resent) == ["user", "function_call", "function_call_output"]
    assert resent["input"][1]["call_id"] == resent["input"][2]["call_id"]

    later = await llm.achat([*history, reply, user("and again?")])
    assert later.content == "Still 1."
    assert len(srv.responses.requests) == 4  # the refused items were not sent again
    assert "reasoning" not in kinds(srv.responses.requests[3])


async def test_a_second_refusal_is_raised_not_looped(srv: FakeOpenAIServer) -> None:
    llm = make_llm(srv)
    history = await a_tool_step(srv, llm)
    srv.responses.rotate_keys()
    refused = {
        "error": {
            "message": "The encrypted content for item rs_fake0001 could not be verified.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_encrypted_content",
        }
    }
    srv.responses.script(Fault.status(400, body=refused))  # the resend is refused too
    with pytest.raises(RequestRejected):
        await llm.achat(history)
    assert len(srv.responses.requests) == 3  # the step, the refused one, the one resend
