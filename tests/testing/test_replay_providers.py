"""Replay works for every provider, plain and streamed: recorded with the real SDK against each
fake server, then answered from the cassette with the server stopped, strictly and offline."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from promptimus.dto import Message, MessageDelta, MessageRole
from promptimus.errors import ReplayMismatch
from promptimus.prompts import Prompt
from promptimus.testing import replay
from promptimus.transport.retry import RetryPolicy

QUESTION = [Message(role=MessageRole.USER, content="Capital of France?")]
AGAIN = [*QUESTION, Message(role=MessageRole.ASSISTANT, content="Paris."), QUESTION[0]]


@dataclass
class Provider:
    """How to start a provider's fake server, script two answers and make the provider."""

    name: str
    serve: Callable[[], Any]
    script: Callable[[Any, str, str], None]
    make: Callable[[str, str], Any]


def _openai_like() -> Provider:
    from promptimus.llms import OpenAILike
    from promptimus.testing import FakeOpenAIServer

    return Provider(
        "openai-like",
        FakeOpenAIServer,
        lambda srv, a, b: srv.chat.script(a, b),
        lambda key, url: OpenAILike("fake-model", api_key=key, base_url=url, **_quick()),
    )


def _responses() -> Provider:
    from promptimus.llms import OpenAIResponses
    from promptimus.testing import FakeOpenAIServer, ResponsesReply

    return Provider(
        "openai-responses",
        FakeOpenAIServer,
        lambda srv, a, b: srv.responses.script(
            ResponsesReply(content=a), ResponsesReply(content=b)
        ),
        lambda key, url: OpenAIResponses("o-test", api_key=key, base_url=url, **_quick()),
    )


def _anthropic() -> Provider:
    from promptimus.llms import Anthropic
    from promptimus.testing import FakeAnthropicServer

    return Provider(
        "anthropic",
        FakeAnthropicServer,
        lambda srv, a, b: srv.messages.script(a, b),
        lambda key, url: Anthropic("claude-test", api_key=key, base_url=url, **_quick()),
    )


def _gemini() -> Provider:
    from promptimus.llms import Gemini
    from promptimus.testing import FakeGeminiServer

    return Provider(
        "gemini",
        FakeGeminiServer,
        lambda srv, a, b: srv.generate.script(a, b),
        lambda key, url: Gemini("gemini-test", api_key=key, base_url=url, **_quick()),
    )


def _quick() -> dict[str, Any]:
    return {"retry": RetryPolicy(max_retries=0), "timeout": 5}


@pytest.fixture(params=[_openai_like, _responses, _anthropic, _gemini], ids=lambda f: f.__name__)
def provider(request: pytest.FixtureRequest) -> Provider:
    made: Provider = request.param()
    return made


@contextmanager
def recorded(provider: Provider, path: Path) -> Iterator[tuple[str, str]]:
    """Record one plain and one streamed call; yields the (stopped) server's key and address."""
    with provider.serve() as srv:
        provider.script(srv, "Paris.", "Paris, streamed.")
        prompt = Prompt("Answer briefly.").with_llm(provider.make(srv.api_key, srv.base_url))
        with replay(path, mode="record"):
            plain = asyncio.run(prompt.forward(QUESTION))
            streamed = asyncio.run(prompt.forward_streamed(AGAIN, lambda delta: None))
        assert (plain.content, streamed.content) == ("Paris.", "Paris, streamed.")
        address = (srv.api_key, srv.base_url)
    yield address


def test_every_provider_replays_plain_and_streamed_calls_offline(
    provider: Provider, tmp_path: Path
) -> None:
    path = tmp_path / f"{provider.name}.json"
    with recorded(provider, path) as (key, url):
        assert key not in path.read_text()
        prompt = Prompt("Answer briefly.").with_llm(provider.make(key, url))
        deltas: list[MessageDelta] = []
        with replay(path, mode="strict") as cassette:  # the server is gone: only the file answers
            plain = asyncio.run(prompt.forward(QUESTION))
            streamed = asyncio.run(prompt.forward_streamed(AGAIN, deltas.append))
        assert (plain.content, streamed.content) == ("Paris.", "Paris, streamed.")
        assert "".join(delta.content or "" for delta in deltas) == "Paris, streamed."
        assert (cassette.hits, cassette.misses) == (2, 0)

        prompt.prompt.value = "Answer at length."
        with pytest.raises(ReplayMismatch) as caught, replay(path, mode="strict"):
            asyncio.run(prompt.forward(QUESTION))
        assert "Answer at length." in caught.value.diff


FACTS = ["Paris is the capital of France.", "Rome is the capital of Italy."]


def _retrieval(key: str, url: str) -> Any:
    from promptimus.embedders import OpenAILikeEmbedder
    from promptimus.modules import RetrievalModule
    from promptimus.vector_stores import InMemoryVectorStore

    embedder = OpenAILikeEmbedder(
        "fake-embedding", api_key=key, base_url=url, retry=RetryPolicy(max_retries=0), timeout=5
    )
    return RetrievalModule(InMemoryVectorStore(), n_semantic=1, n_text=0, embedder=embedder)


async def _insert_and_search(retrieval: Any) -> str:
    await retrieval.insert(FACTS)
    (hit,) = await retrieval("Which city is the capital of Italy?")
    return str(hit.document)


def test_embedding_calls_replay_offline_and_strict_refuses_new_texts(tmp_path: Path) -> None:
    from promptimus.testing import FakeOpenAIServer

    path = tmp_path / "embeddings.json"
    with FakeOpenAIServer() as srv:
        address = (srv.api_key, srv.base_url)
        with replay(path, mode="record"):
            recorded_answer = asyncio.run(_insert_and_search(_retrieval(*address)))
        assert len(srv.embeddings.requests) == 2  # the documents, then the query
    assert recorded_answer == FACTS[1]
    with replay(path, mode="strict") as cassette:  # the server is gone: only the file answers
        assert asyncio.run(_insert_and_search(_retrieval(*address))) == FACTS[1]
    assert (cassette.hits, cassette.misses) == (2, 0)

    async def other_query() -> None:
        retrieval = _retrieval(*address)
        await retrieval.insert(FACTS)
        await retrieval("Which city is the capital of Spain?")

    with pytest.raises(ReplayMismatch) as caught, replay(path, mode="strict"):
        asyncio.run(other_query())
    assert "Spain" in caught.value.diff


def test_replay_is_callable_however_it_was_imported(tmp_path: Path) -> None:
    # in a fresh interpreter: the submodule imported first (as a plugin or a test module may),
    # then the function asked for by its documented name
    script = (
        "import importlib, sys\n"
        "importlib.import_module('promptimus.testing.replay')\n"
        "from promptimus.testing import replay\n"
        "with replay(sys.argv[1], mode='record') as cassette:\n"
        "    print(cassette.mode)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "any.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "record"
