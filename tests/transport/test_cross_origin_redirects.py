"""No provider sends its key to another origin: a redirect that leaves the configured server is
refused with `CrossOriginRedirect`, through the real SDKs against two fake servers on 127.0.0.1
on different ports, and the second server never sees a request (so never the key)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.dto.search_hit import SearchHit
from promptimus.embedders import OpenAILikeEmbedder
from promptimus.errors import CrossOriginRedirect
from promptimus.llms import Anthropic, Gemini, OpenAILike, aaccumulate
from promptimus.rerankers.openai import OpenAILikeReranker
from promptimus.testing import FakeAnthropicServer, FakeOpenAIServer, Fault
from promptimus.testing.fake_gemini import FakeGeminiServer
from promptimus.testing.fake_gemini_script import GeminiFault
from promptimus.transport import RetryPolicy

KEY = "sk-never-elsewhere-0123456789"


def retry() -> RetryPolicy:
    async def no_wait(_: float) -> None:
        return None

    return RetryPolicy(max_retries=2, sleep=no_wait)


def ask() -> list[Message]:
    return [Message(role=MessageRole.USER, content="hi")]


@pytest.fixture
def elsewhere() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def assert_never_reached(server: Any) -> None:
    assert server.requests == []


def openai_llm(srv: FakeOpenAIServer) -> OpenAILike:
    return OpenAILike("m", api_key=KEY, base_url=srv.base_url, retry=retry())


@pytest.mark.parametrize("status", [301, 302, 307, 308])
async def test_openai_chat_refuses_a_redirect_to_another_origin(
    elsewhere: FakeOpenAIServer, status: int
) -> None:
    with FakeOpenAIServer() as srv:
        srv.chat.script(Fault.redirect(f"{elsewhere.base_url}/chat/completions", status))
        with pytest.raises(CrossOriginRedirect) as caught:
            await openai_llm(srv).achat(ask())
    assert f"127.0.0.1:{urlsplit(elsewhere.base_url).port}" in str(caught.value)
    assert KEY not in str(caught.value)
    assert len(srv.chat.requests) == 1  # refused, not retried
    assert_never_reached(elsewhere)


async def test_openai_stream_refuses_a_redirect_to_another_origin(
    elsewhere: FakeOpenAIServer,
) -> None:
    with FakeOpenAIServer() as srv:
        srv.chat.script(Fault.redirect(f"{elsewhere.base_url}/chat/completions"))
        with pytest.raises(CrossOriginRedirect):
            await aaccumulate(openai_llm(srv).astream(ask()))
    assert_never_reached(elsewhere)


async def test_a_redirect_within_the_same_origin_is_still_followed() -> None:
    with FakeOpenAIServer() as srv:
        srv.chat.script(Fault.redirect(f"{srv.base_url}/chat/completions"), "moved here")
        reply = await openai_llm(srv).achat(ask())
    assert reply.content == "moved here"


async def test_anthropic_refuses_a_redirect_to_another_origin(
    elsewhere: FakeOpenAIServer,
) -> None:
    with FakeAnthropicServer(api_key=KEY) as srv:
        srv.messages.script(
            Fault.redirect(f"{elsewhere.base_url}/v1/messages"),
            Fault.redirect(f"{elsewhere.base_url}/v1/messages", 308),
        )
        llm = Anthropic("claude-test", api_key=KEY, base_url=srv.base_url, retry=retry())
        with pytest.raises(CrossOriginRedirect):
            await llm.achat(ask())
        with pytest.raises(CrossOriginRedirect):
            await aaccumulate(llm.astream(ask()))
    assert_never_reached(elsewhere)


async def test_gemini_refuses_a_redirect_to_another_origin(elsewhere: FakeOpenAIServer) -> None:
    with FakeGeminiServer(api_key=KEY) as srv:
        target = f"{elsewhere.base_url}/v1beta/models/g:generateContent"
        srv.generate.script(GeminiFault.redirect(target), GeminiFault.redirect(target, 308))
        llm = Gemini("g", api_key=KEY, base_url=srv.base_url, retry=retry())
        with pytest.raises(CrossOriginRedirect):
            await llm.achat(ask())
        with pytest.raises(CrossOriginRedirect):
            await aaccumulate(llm.astream(ask()))
    assert_never_reached(elsewhere)


@pytest.mark.parametrize("sdk_requests", [False, True])
async def test_embedders_and_rerankers_refuse_a_redirect_to_another_origin(
    elsewhere: FakeOpenAIServer, sdk_requests: bool
) -> None:
    with FakeOpenAIServer() as srv:
        srv.embeddings.script(Fault.redirect(f"{elsewhere.base_url}/embeddings"))
        srv.rerank.script(Fault.redirect(f"{elsewhere.base_url}/rerank"))
        embedder = OpenAILikeEmbedder(
            "e", KEY, srv.base_url, retry=retry(), sdk_requests=sdk_requests
        )
        reranker = OpenAILikeReranker(
            "r", KEY, srv.base_url, retry=retry(), sdk_requests=sdk_requests
        )
        calls: list[Callable[[], Awaitable[Any]]] = [
            lambda: embedder.aembed("hello"),
            lambda: reranker.rerank("q", [SearchHit(id="1", document="d", score=0.0)]),
        ]
        for call in calls:
            with pytest.raises(CrossOriginRedirect):
                await call()
    assert_never_reached(elsewhere)
