"""A password in a provider's ``base_url`` (``http://user:password@host``) is a secret like the
API key: no provider's repr, and no error it raises (its whole printed traceback), shows it."""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.dto.search_hit import SearchHit
from promptimus.embedders import OpenAILikeEmbedder
from promptimus.llms import Anthropic, Gemini, OpenAILike
from promptimus.rerankers.openai import OpenAILikeReranker
from promptimus.testing import FakeAnthropicServer, FakeOpenAIServer, Fault
from promptimus.testing.fake_gemini import FakeGeminiServer
from promptimus.testing.fake_gemini_script import GeminiFault
from promptimus.transport import RetryPolicy

PASSWORD = "hunter2-in-the-url"


def with_password(base_url: str) -> str:
    scheme, rest = base_url.split("://", 1)
    return f"{scheme}://alice:{PASSWORD}@{rest}"


def no_retry() -> RetryPolicy:
    return RetryPolicy(max_retries=0)


def ask() -> list[Message]:
    return [Message(role=MessageRole.USER, content="hi")]


async def assert_hidden(provider: Any, call: Callable[[], Awaitable[Any]]) -> None:
    assert PASSWORD not in repr(provider)
    with pytest.raises(Exception) as caught:
        await call()
    printed = "".join(traceback.format_exception(caught.value))
    assert "alice" in printed or "***" in printed or "127.0.0.1" in printed
    assert PASSWORD not in printed


async def test_openai_like_providers_hide_the_password() -> None:
    with FakeOpenAIServer() as srv:
        srv.chat.script(Fault.status(400))
        srv.embeddings.script(Fault.status(400))
        srv.rerank.script(Fault.status(400))
        url = with_password(srv.base_url)
        llm = OpenAILike("m", api_key="sk-test", base_url=url, retry=no_retry())
        embedder = OpenAILikeEmbedder("e", "sk-test", url, retry=no_retry())
        reranker = OpenAILikeReranker("r", "sk-test", url, retry=no_retry())
        await assert_hidden(llm, lambda: llm.achat(ask()))
        await assert_hidden(embedder, lambda: embedder.aembed("x"))
        hits = [SearchHit(id="1", document="d", score=0.0)]
        await assert_hidden(reranker, lambda: reranker.rerank("q", hits))


async def test_anthropic_hides_the_password() -> None:
    with FakeAnthropicServer() as srv:
        srv.messages.script(Fault.status(400))
        llm = Anthropic(
            "c", api_key=srv.api_key, base_url=with_password(srv.base_url), retry=no_retry()
        )
        await assert_hidden(llm, lambda: llm.achat(ask()))


async def test_gemini_hides_the_password() -> None:
    with FakeGeminiServer(api_key="AIza-test") as srv:
        srv.generate.script(GeminiFault.status(400))
        llm = Gemini(
            "g", api_key="AIza-test", base_url=with_password(srv.base_url), retry=no_retry()
        )
        await assert_hidden(llm, lambda: llm.achat(ask()))
