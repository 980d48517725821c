"""OpenAILike keeps what a server attaches to a tool call (Gemini's thought signature through its
OpenAI-compatible endpoint) and sends it back on that call; documents reach it as a described
placeholder. Checked on the wire, through the real openai SDK and the fake server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.dto import DocumentContent, Message, MessageRole
from promptimus.llms import OpenAILike, aaccumulate
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall

SIGNED = {"google": {"thought_signature": "c2lnbmF0dXJl"}}


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def make_llm(srv: FakeOpenAIServer) -> OpenAILike:
    return OpenAILike("gemini-3-pro", api_key=srv.api_key, base_url=srv.base_url)


def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: sunny"


def signed_call(city: str, call_id: str) -> Reply:
    return Reply(tool_calls=[ToolCall("lookup", {"city": city}, id=call_id, extra_content=SIGNED)])


def sent_calls(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        call
        for message in request["messages"]
        if message["role"] == "assistant"
        for call in message.get("tool_calls", ())
    ]


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_tool_calls_extra_content_goes_back_on_that_call(
    srv: FakeOpenAIServer, streaming: bool
) -> None:
    srv.chat.script(signed_call("Oslo", "c1"), signed_call("Rome", "c2"), "Both sunny.")
    agent = OpenaiToolCallingAgent("p", [lookup]).with_llm(make_llm(srv))
    if streaming:
        events = [event async for event in agent.stream("weather?")]
        answer = events[-1].output  # type: ignore[union-attr]
    else:
        answer = await agent("weather?")

    assert answer.content == "Both sunny."
    second, third = srv.chat.requests[1], srv.chat.requests[2]
    assert [(c["id"], c["extra_content"]) for c in sent_calls(second)] == [("c1", SIGNED)]
    assert [(c["id"], c["extra_content"]) for c in sent_calls(third)] == [
        ("c1", SIGNED),
        ("c2", SIGNED),
    ]


async def test_a_call_without_extra_content_sends_none(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Reply(tool_calls=[ToolCall("lookup", {"city": "Oslo"})]), "ok")
    llm = make_llm(srv)
    reply = await llm.achat([Message(role=MessageRole.USER, content="x")])
    assert reply.tool_calls is not None and reply.tool_calls[0].extra_content is None
    streamed = await aaccumulate(llm.astream([Message(role=MessageRole.USER, content="x")]))
    assert streamed.tool_calls is None or streamed.tool_calls[0].extra_content is None
    result = Message(role=MessageRole.TOOL, content="sunny", tool_call_id=reply.tool_calls[0].id)
    await llm.achat([Message(role=MessageRole.USER, content="x"), reply, result])
    assert "extra_content" not in sent_calls(srv.chat.requests[-1])[0]


async def test_a_document_reaches_an_openai_server_as_a_described_placeholder(
    srv: FakeOpenAIServer,
) -> None:
    pdf = DocumentContent.from_bytes(b"%PDF-1.4 " + b"x" * 91, name="q3.pdf")
    await make_llm(srv).achat(
        [Message(role=MessageRole.USER, content="Sum it up.", documents=[pdf])]
    )
    text = srv.chat.requests[0]["messages"][0]["content"]
    assert text.startswith("Sum it up.\n\n[Attached document 'q3.pdf' (application/pdf")
    assert "cannot read attached documents" in text and pdf.data not in text
