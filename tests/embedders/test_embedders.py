"""Embedders: OpenAILikeEmbedder against the fake HTTP server (real openai SDK), HashingEmbedder."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator

import pytest

from promptimus.embedders import EmbedderProtocol, HashingEmbedder, OpenAILikeEmbedder
from promptimus.embedders.hashing import hashed_embedding
from promptimus.errors import (
    InvalidArgument,
    ProviderResponseError,
    RetryBudgetExhausted,
)
from promptimus.ops import cosine
from promptimus.testing import FakeOpenAIServer, Fault
from promptimus.transport import RetryPolicy

FAST_RETRY = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.002)


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def assert_same_vectors(got: list[list[float]], want: list[list[float]]) -> None:
    # The SDK ships vectors as base64 float32, so compare to float32 precision.
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, abs=1e-6)


def embedder(srv: FakeOpenAIServer, **kwargs) -> OpenAILikeEmbedder:
    kwargs.setdefault("retry", FAST_RETRY)
    return OpenAILikeEmbedder(
        "fake-embedding", api_key=srv.api_key, base_url=srv.base_url, **kwargs
    )


@pytest.mark.parametrize(("n", "batch_size"), [(1, 4), (4, 4), (5, 4), (10, 3), (25, 1)])
async def test_requests_are_ceil_n_over_batch_size(
    srv: FakeOpenAIServer, n: int, batch_size: int
) -> None:
    emb = embedder(srv, batch_size=batch_size)
    texts = [f"document number {i}" for i in range(n)]
    vectors = await emb.aembed_batch(texts)
    assert len(srv.embeddings.requests) == math.ceil(n / batch_size) == emb.request_count
    # Batches go out concurrently, so they may arrive in any order: compare the sizes as a set.
    sizes = sorted((len(r["input"]) for r in srv.embeddings.requests), reverse=True)
    full, rest = divmod(n, batch_size)
    assert sizes == [batch_size] * full + ([rest] if rest else [])
    # Same vectors, same order as the texts (the fake server hashes each input).
    assert_same_vectors(vectors, [hashed_embedding(t, len(vectors[0])) for t in texts])


async def test_order_is_kept_when_batches_finish_out_of_order(srv: FakeOpenAIServer) -> None:
    first_arrived = asyncio.Event()
    later_batch_answered = asyncio.Event()

    async def first_answers_last(body: dict) -> None:
        # The first batch answers only after another one has, and that one only while the first
        # is open: a naive "append as they come" would scramble the order. Events, not sleeps of
        # different lengths, so a loaded machine cannot change the order.
        if int(body["input"][0].split()[-1]) == 0:
            first_arrived.set()
            await asyncio.wait_for(later_batch_answered.wait(), 30)
        else:
            await asyncio.wait_for(first_arrived.wait(), 30)
            later_batch_answered.set()
        return None  # the default: hashed embeddings of this batch

    srv.embeddings.respond_with(first_answers_last)
    emb = embedder(srv, batch_size=2, max_concurrency=3)
    texts = [f"text {i}" for i in range(12)]
    vectors = await emb.aembed_batch(texts)
    assert_same_vectors(vectors, [hashed_embedding(t, len(vectors[0])) for t in texts])
    assert len(srv.embeddings.requests) == 6
    assert 1 < srv.max_in_flight <= 3  # concurrent (the first waited on another), within the cap


async def test_vectors_are_matched_by_index_when_the_server_reorders(
    srv: FakeOpenAIServer,
) -> None:
    def reversed_reply(body: dict) -> dict:
        data = [
            {"object": "embedding", "index": i, "embedding": [float(i), 1.0]}
            for i in range(len(body["input"]))
        ]
        return {"object": "list", "data": data[::-1], "model": "m", "usage": None}

    srv.embeddings.respond_with(reversed_reply)
    vectors = await embedder(srv).aembed_batch(["a", "b", "c"])
    assert vectors == [[0.0, 1.0], [1.0, 1.0], [2.0, 1.0]]


async def test_transient_errors_are_retried(srv: FakeOpenAIServer) -> None:
    srv.embeddings.script(Fault.status(429, retry_after=0.01), Fault.status(500))
    emb = embedder(srv)
    vector = await emb.aembed("hello world")
    assert vector == pytest.approx(hashed_embedding("hello world", len(vector)), abs=1e-6)
    assert len(srv.embeddings.requests) == 3
    assert emb.request_count == 1


async def test_a_failing_batch_fails_the_call_after_its_retries(srv: FakeOpenAIServer) -> None:
    srv.embeddings.respond_with(lambda body: Fault.status(503))
    emb = embedder(srv, retry=RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.001))
    with pytest.raises(RetryBudgetExhausted, match="3 attempts"):
        await emb.aembed_batch(["a", "b"])
    assert len(srv.embeddings.requests) == 3


async def test_client_errors_are_not_retried(srv: FakeOpenAIServer) -> None:
    srv.embeddings.script(Fault.status(400, body={"error": {"message": "input too long"}}))
    with pytest.raises(ProviderResponseError, match="input too long"):
        await embedder(srv).aembed("x")
    assert len(srv.embeddings.requests) == 1


async def test_dropped_inputs_are_an_error_not_a_short_list(srv: FakeOpenAIServer) -> None:
    srv.embeddings.script([[1.0, 0.0]], [[1.0, 0.0]])  # one vector for two inputs, twice
    with pytest.raises(ProviderResponseError, match="1 embeddings for 2 inputs"):
        await embedder(srv).aembed_batch(["a", "b"])
    assert len(srv.embeddings.requests) == 2  # a malformed reply is retried once


async def test_dimensions_and_model_are_sent(srv: FakeOpenAIServer) -> None:
    emb = embedder(srv, dimensions=32)
    vector = await emb.aembed("short vectors")
    assert len(vector) == 32
    assert srv.embeddings.requests[0]["dimensions"] == 32
    assert srv.embeddings.requests[0]["model"] == "fake-embedding"
    assert emb.usage.prompt_tokens > 0


async def test_empty_input_makes_no_request(srv: FakeOpenAIServer) -> None:
    assert await embedder(srv).aembed_batch([]) == []
    assert srv.embeddings.requests == []


async def test_a_single_string_is_refused_by_aembed_batch(srv: FakeOpenAIServer) -> None:
    with pytest.raises(InvalidArgument, match="aembed"):
        await embedder(srv).aembed_batch("not a list")  # type: ignore[arg-type]


def test_api_key_is_not_in_repr() -> None:
    emb = OpenAILikeEmbedder("m", api_key="sk-secret-value-123", base_url="http://x/v1")
    assert "sk-secret" not in repr(emb)
    assert isinstance(emb, EmbedderProtocol)
    with pytest.raises(InvalidArgument):
        OpenAILikeEmbedder("m", batch_size=0)


async def test_hashing_embedder_is_lexical_and_deterministic() -> None:
    emb = HashingEmbedder(dimensions=128)
    assert isinstance(emb, EmbedderProtocol)
    assert emb.model_name == "hashing-128"
    cat, cats, car = await emb.aembed_batch(
        ["the cat sleeps on the mat", "cats sleep on mats", "quarterly revenue grew"]
    )
    assert len(cat) == 128
    assert cosine(cat, cats) > cosine(cat, car)
    assert await emb.aembed("the cat sleeps on the mat") == cat
    assert await emb.aembed("") == [0.0] * 128  # no words, no direction
    assert cosine(await emb.aembed(""), cat) == 0.0
