"""A 200 whose JSON cannot be read is a `MalformedReply`, whichever way the request went.

``json.loads`` refuses bytes that are not UTF-8, nesting past the recursion limit and integers of
more than 4,300 digits with ``UnicodeDecodeError``, ``RecursionError`` and ``ValueError``: each
reply comes from the fake server (`Fault.raw`) through the real openai SDK, on the SDK's typed
method, its low-level ``client.post`` and the reused request sent straight through its HTTP
client, plain and streamed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.errors import MalformedReply
from promptimus.llms import OpenAILike, aaccumulate
from promptimus.testing import FakeOpenAIServer, Fault
from promptimus.transport import RetryPolicy

GOOD = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}}]}'
BODIES = {
    "not UTF-8": (GOOD.replace(b"fine", b"caf\xe9"), r"not UTF-8 text \(byte 0xe9"),
    "nested past the recursion limit": (b"[" * 200_000 + b"]" * 200_000, "too deeply"),
    "a 5,000-digit integer": (GOOD[:-1] + b', "n": ' + b"7" * 5000 + b"}", "number too long"),
}
WAYS = ["sdk typed method", "sdk client.post", "reused request"]


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def ask() -> list[Message]:
    return [Message(role=MessageRole.USER, content="hello")]


async def provider(srv: FakeOpenAIServer, way: str) -> OpenAILike:
    llm = OpenAILike(
        "m",
        api_key=srv.api_key,
        base_url=srv.base_url,
        timeout=30.0,
        retry=RetryPolicy(max_retries=0),
        sdk_requests=way == "sdk typed method",
    )
    if way == "reused request":
        await llm.achat(ask())  # the request the next one reuses
        assert llm._factory.connection().direct_paths
    return llm


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("name", BODIES)
async def test_an_unreadable_plain_reply_is_malformed(
    srv: FakeOpenAIServer, name: str, way: str
) -> None:
    body, said = BODIES[name]
    llm = await provider(srv, way)
    srv.chat.script(Fault.raw(body))
    with pytest.raises(MalformedReply, match=said) as raised:
        await llm.achat(ask())
    assert "chat request for model 'm'" in str(raised.value)
    assert raised.value.__cause__ is not None  # what json refused, for the curious


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("name", BODIES)
async def test_an_unreadable_stream_chunk_is_malformed(
    srv: FakeOpenAIServer, name: str, way: str
) -> None:
    body, said = BODIES[name]
    llm = await provider(srv, way)
    srv.chat.script(Fault.raw(b"data: " + body + b"\n\ndata: [DONE]\n\n"))
    with pytest.raises(MalformedReply, match=said):
        await aaccumulate(llm.astream(ask()))


async def test_an_unreadable_reply_is_retried_once_then_named(srv: FakeOpenAIServer) -> None:
    llm = OpenAILike(
        "m",
        api_key=srv.api_key,
        base_url=srv.base_url,
        retry=RetryPolicy(max_retries=4, base_delay=0.001, max_delay=0.002),
    )
    body, said = BODIES["not UTF-8"]
    srv.chat.script(Fault.raw(body), Fault.raw(body), "never reached")
    with pytest.raises(MalformedReply, match=said):
        await llm.achat(ask())
    assert len(srv.chat.requests) == 2
