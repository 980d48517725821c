"""Edge cases of providers, embedders, stores and retrieval that once failed."""

from __future__ import annotations

import math
from typing import Any

import pytest

from promptimus.embedders import OpenAILikeEmbedder
from promptimus.errors import InvalidEmbedding, MalformedReply
from promptimus.llms import resolve
from promptimus.modules import RetrievalModule
from promptimus.ops import cosine
from promptimus.testing import FakeOpenAIServer
from promptimus.vector_stores import InMemoryVectorStore

# --- ops.cosine ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad", [[math.nan, 1.0], [1.0, math.nan], [math.inf, 1.0], [1.0, -math.inf]]
)
def test_cosine_refuses_nan_and_infinity_instead_of_calling_it_a_perfect_match(
    bad: list[float],
) -> None:
    # Clamping NaN into [-1, 1] used to give 1.0: a broken vector ranked as an exact match.
    with pytest.raises(InvalidEmbedding, match="NaN or infinity"):
        cosine(bad, [1.0, 1.0])
    with pytest.raises(InvalidEmbedding, match="NaN or infinity"):
        cosine([1.0, 1.0], bad)


def test_cosine_is_exact_for_very_large_and_very_small_components() -> None:
    # Squares of 1e200 overflow to inf (inf / inf = NaN, clamped to 1.0); squares of 1e-200
    # underflow to 0 (a false zero vector, scored 0.0).
    assert cosine([1e200, 1e200], [1e200, 0.0]) == pytest.approx(1 / math.sqrt(2))
    assert cosine([1e-200, 0.0], [1e-200, 0.0]) == pytest.approx(1.0)
    assert cosine([1e-200, 1e-200], [-1e-200, -1e-200]) == pytest.approx(-1.0)
    assert cosine([0.0, 0.0], [1e-200, 0.0]) == 0.0


# --- InMemoryVectorStore: a broken query vector is refused, not ranked ------------------------


@pytest.mark.parametrize("space", ["cosine", "l2", "ip"])
async def test_store_search_refuses_a_nan_query(space: Any) -> None:
    store = InMemoryVectorStore(space=space)
    await store.insert([[1.0, 0.0], [0.0, 1.0]], ["a", "b"], ["a", "b"])
    with pytest.raises(InvalidEmbedding, match="NaN or infinity"):
        await store.search([math.nan, 1.0], 2)


async def test_retrieval_with_a_server_returning_a_nan_query_vector_fails_loudly() -> None:
    # Documents embed fine; the query embedding comes back with a NaN (over real HTTP, the SDK
    # decoding the server's answer). The store used to answer with arbitrary documents scored 0.
    with FakeOpenAIServer() as srv:
        embedder = OpenAILikeEmbedder("fake-embedding", api_key="k", base_url=srv.base_url)
        store = InMemoryVectorStore(text_search=False)
        retrieval = RetrievalModule(store, n_text=0, embedder=embedder)
        await retrieval.insert(["cats purr", "dogs bark"])
        nan_vector = [math.nan] + [0.0] * 63
        srv.embeddings.script([nan_vector], [nan_vector])  # a malformed reply is retried once
        with pytest.raises(MalformedReply, match="NaN or infinity"):
            await retrieval("cats")
        assert srv.embeddings.pending == 0


# --- resolve(): the env mapping also configures Ollama -----------------------------------------


def test_resolve_reads_ollama_settings_from_the_given_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    env = {"OLLAMA_BASE_URL": "http://gpu-box:11434/v1"}
    assert resolve("ollama:llama3.2", env=env).base_url == "http://gpu-box:11434/v1"  # type: ignore[union-attr]
    env = {"OLLAMA_HOST": "gpu-box:1234"}
    assert resolve("ollama:llama3.2", env=env).base_url == "http://gpu-box:1234/v1"  # type: ignore[union-attr]
    env = {"PROMPTIMUS_MODEL_LOCAL": "ollama:phi4", "OLLAMA_HOST": "http://box:9/"}
    assert resolve("local", env=env).base_url == "http://box:9/v1"  # type: ignore[union-attr]
