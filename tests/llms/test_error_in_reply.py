"""A 200 whose body is ``{"error": {...}}`` (some proxies answer so) says what the server said.

It is `ErrorInReply` (a `MalformedReply`), never "choices is missing", and the API key a server
quotes in it is masked. Replies come from the fake server through the real openai SDK, on both
ways of sending.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterator

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.errors import ErrorInReply
from promptimus.llms import OpenAILike
from promptimus.testing import FakeOpenAIServer, Fault
from promptimus.transport import RetryPolicy


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.mark.parametrize("sdk_requests", [False, True])
async def test_an_error_object_in_a_200_is_named_with_the_servers_message(
    srv: FakeOpenAIServer, sdk_requests: bool
) -> None:
    message = f"Upstream quota exceeded for key {srv.api_key}; retry in 20s"
    body = json.dumps({"error": {"message": message, "code": 429}}).encode()
    llm = OpenAILike(
        "m",
        api_key=srv.api_key,
        base_url=srv.base_url,
        retry=RetryPolicy(max_retries=0),
        sdk_requests=sdk_requests,
    )
    srv.chat.script(Fault.raw(body))
    with pytest.raises(ErrorInReply) as raised:
        await llm.achat([Message(role=MessageRole.USER, content="hi")])
    text = str(raised.value)
    assert "Upstream quota exceeded for key ***; retry in 20s" in text and "code 429" in text
    assert "choices" not in text
    assert srv.api_key not in "".join(traceback.format_exception(raised.value))


async def test_an_error_given_as_text_is_quoted_too(srv: FakeOpenAIServer) -> None:
    llm = OpenAILike(
        "m", api_key=srv.api_key, base_url=srv.base_url, retry=RetryPolicy(max_retries=0)
    )
    srv.chat.script(Fault.raw(b'{"error": "model is loading"}'))
    with pytest.raises(ErrorInReply, match="'model is loading'"):
        await llm.achat([Message(role=MessageRole.USER, content="hi")])


async def test_an_error_without_a_code_is_named_by_its_type(srv: FakeOpenAIServer) -> None:
    """As on Anthropic and Gemini: the error's type says what kind of failure it was."""
    llm = OpenAILike(
        "m", api_key=srv.api_key, base_url=srv.base_url, retry=RetryPolicy(max_retries=0)
    )
    body = {"error": {"message": "The server is overloaded.", "type": "server_error"}}
    srv.chat.script(Fault.raw(json.dumps(body).encode()))
    with pytest.raises(ErrorInReply, match=r"'The server is overloaded\.' \(server_error\)"):
        await llm.achat([Message(role=MessageRole.USER, content="hi")])
