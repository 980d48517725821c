"""Rerankers: RRF fusion numbers, the /rerank API client through the fake server, the LLM judge."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptimus.dto import MessageRole
from promptimus.errors import (
    FailedToParseOutput,
    InvalidArgument,
    ProviderConfigError,
    ProviderResponseError,
    RetryBudgetExhausted,
)
from promptimus.llms.scripted import ScriptedLLM
from promptimus.rerankers import LLMReranker, OpenAILikeReranker, RRFReranker
from promptimus.rerankers.llm import parse_scores
from promptimus.rerankers.rrf import reciprocal_rank_fusion
from promptimus.testing import Fault
from promptimus.testing.fake_openai import FakeOpenAIServer
from promptimus.transport import RetryPolicy
from promptimus.vector_stores.base import SearchHit


def hit(doc_id: str, score: float = 0.0, document: str | None = None, **meta: object) -> SearchHit:
    return SearchHit(doc_id, document if document is not None else f"text of {doc_id}", score, meta)


def ids(hits: list[SearchHit]) -> list[str]:
    return [h.id for h in hits]


# --- RRF --------------------------------------------------------------------------------------


def test_rrf_matches_hand_computed_scores() -> None:
    vector = [hit("a"), hit("b"), hit("c")]
    text = [hit("c"), hit("a"), hit("d")]
    fused = RRFReranker(k=60).fuse([vector, text])
    # a: ranks 1 and 2; c: ranks 3 and 1; b: rank 2; d: rank 3
    assert ids(fused) == ["a", "c", "b", "d"]
    assert [h.score for h in fused] == pytest.approx(
        [1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62, 1 / 63], rel=1e-15
    )


def test_rrf_k_changes_the_numbers_and_is_a_parameter() -> None:
    rrf = RRFReranker(k=0)
    fused = rrf.fuse([[hit("a"), hit("b")], [hit("b"), hit("c")]])
    assert [(h.id, h.score) for h in fused] == [("b", 1.5), ("a", 1.0), ("c", 0.5)]
    rrf.k.value = 1
    assert [h.score for h in rrf.fuse([[hit("a"), hit("b")]])] == [0.5, 1 / 3]
    assert rrf.state_dict() == {"k": 1}


def test_rrf_ties_are_broken_deterministically() -> None:
    # x and y swap places: identical scores; the better best rank ties too, so first seen wins
    first = reciprocal_rank_fusion([[hit("x"), hit("y")], [hit("y"), hit("x")]])
    assert ids(first) == ["x", "y"]
    assert first[0].score == first[1].score
    swapped = reciprocal_rank_fusion([[hit("y"), hit("x")], [hit("x"), hit("y")]])
    assert ids(swapped) == ["y", "x"]
    # equal sums (1/1 = 1/2 + 1/2 with k=0): a better best rank first, then the one seen first
    level = reciprocal_rank_fusion([[hit("m"), hit("n")], [hit("o"), hit("n")]], k=0)
    assert [(h.id, h.score) for h in level] == [("m", 1.0), ("o", 1.0), ("n", 1.0)]


def test_rrf_keeps_the_first_hit_seen_and_counts_repeats_once() -> None:
    vector = [hit("a", 0.9, "vector text", source="vector"), hit("a", 0.8), hit("b", 0.5)]
    text = [hit("b", 12.0, source="bm25"), hit("a", 3.0, "text text", source="bm25")]
    fused = reciprocal_rank_fusion([vector, text], k=60)
    a = fused[0]
    assert (a.id, a.document, a.metadata) == ("a", "vector text", {"source": "vector"})
    assert a.score == pytest.approx(1 / 61 + 1 / 62)  # the repeat at rank 2 does not count
    assert fused[1].score == pytest.approx(1 / 63 + 1 / 61)


async def test_rrf_rerank_keeps_order_and_honours_top_n() -> None:
    rrf = RRFReranker()
    out = await rrf.rerank("ignored", [hit("a", 0.1), hit("b", 0.9), hit("c", 0.5)], top_n=2)
    assert ids(out) == ["a", "b"]
    assert await rrf([[hit("a")], [hit("b")]], top_n=1) == [hit("a", 1 / 61)]


@pytest.mark.parametrize("k", [-1, float("inf"), "60", True])
def test_rrf_rejects_a_bad_k(k: object) -> None:
    with pytest.raises(InvalidArgument, match="k"):
        reciprocal_rank_fusion([[hit("a")]], k=k)  # type: ignore[arg-type]


def test_rrf_k_round_trips_through_a_checkpoint(tmp_path: Path) -> None:
    RRFReranker(k=15).save(tmp_path / "rrf.toml")
    loaded = RRFReranker().load(tmp_path / "rrf.toml")
    assert loaded.k.value == 15
    assert loaded.fuse([[hit("a")]])[0].score == 1 / 16


# --- OpenAILikeReranker against the fake server ------------------------------------------------

FAST = RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.002)
DOCS = [
    hit("d0", 0.3, "Bananas are yellow fruit", lang="en"),
    hit("d1", 0.2, "The capital of France is Paris"),
    hit("d2", 0.1, "Paris hosts the Louvre museum"),
]


@pytest.fixture
def srv():
    with FakeOpenAIServer() as server:
        yield server


async def test_api_reranker_maps_results_back_by_index(srv: FakeOpenAIServer) -> None:
    srv.rerank.script([0.1, 0.9, 0.5])
    reranker = OpenAILikeReranker("rerank-1", base_url=srv.base_url, retry=FAST)
    out = await reranker.rerank("capital of France", DOCS)
    assert ids(out) == ["d1", "d2", "d0"]
    assert [h.score for h in out] == [0.9, 0.5, 0.1]
    assert out[2].metadata == {"lang": "en"} and out[2].document == DOCS[0].document
    (body,) = srv.rerank.requests
    assert body["model"] == "rerank-1"
    assert body["query"] == "capital of France"
    assert body["documents"] == [h.document for h in DOCS]
    assert "top_n" not in body


async def test_api_reranker_honours_top_n(srv: FakeOpenAIServer) -> None:
    reranker = OpenAILikeReranker("rerank-1", base_url=srv.base_url + "/", retry=FAST)
    out = await reranker.rerank("Paris capital France", DOCS, top_n=1)
    assert ids(out) == ["d1"]  # lexical overlap: the France sentence wins
    assert srv.rerank.requests[0]["top_n"] == 1
    # a server that ignores top_n is cut locally
    srv.rerank.script(
        {"results": [{"index": 2, "relevance_score": 0.4}, {"index": 0, "relevance_score": 0.7}]}
    )
    out = await reranker.rerank("q", DOCS, top_n=1)
    assert [(h.id, h.score) for h in out] == [("d0", 0.7)]


async def test_api_reranker_retries_transient_failures(srv: FakeOpenAIServer) -> None:
    srv.rerank.script(Fault.status(503), Fault.status(429, retry_after=0), [1.0, 0.0, 0.5])
    reranker = OpenAILikeReranker("rerank-1", base_url=srv.base_url, retry=FAST)
    out = await reranker.rerank("q", DOCS)
    assert ids(out) == ["d0", "d2", "d1"]
    assert len(srv.rerank.requests) == 3
    assert reranker.request_count == 3

    srv.rerank.script(Fault.status(500), Fault.status(500), Fault.status(500))
    with pytest.raises(RetryBudgetExhausted, match="3 attempts"):
        await reranker.rerank("q", DOCS)


async def test_api_reranker_does_not_retry_client_errors_and_hides_the_key() -> None:
    with FakeOpenAIServer(api_key="sk-secret-123", require_auth=True) as srv:
        good = OpenAILikeReranker("r", api_key="sk-secret-123", base_url=srv.base_url, retry=FAST)
        assert ids(await good.rerank("Paris", DOCS[:2])) == ["d1", "d0"]
        assert srv.requests[-1].headers["authorization"] == "Bearer sk-secret-123"

        srv.rerank.script(Fault.status(400, body={"error": {"message": "sk-secret-123 is bad"}}))
        with pytest.raises(ProviderResponseError) as info:
            await good.rerank("Paris", DOCS)
        assert len(srv.rerank.requests) == 2  # not retried
        assert "sk-secret-123" not in str(info.value)
        assert "sk-secret-123" not in repr(good)

        anonymous = OpenAILikeReranker("r", base_url=srv.base_url, retry=FAST)
        with pytest.raises(ProviderResponseError, match="401"):
            await anonymous.rerank("Paris", DOCS)


async def test_api_reranker_reads_the_key_from_the_named_variable(
    srv: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_RERANK_KEY", "sk-from-env")
    reranker = OpenAILikeReranker("r", base_url=srv.base_url, api_key_env="MY_RERANK_KEY")
    await reranker.rerank("q", DOCS[:1])
    assert srv.requests[-1].headers["authorization"] == "Bearer sk-from-env"


@pytest.mark.parametrize(
    "answer",
    [
        Fault.malformed(),
        {"nothing": []},
        {"results": [{"index": 7, "relevance_score": 0.5}]},
        {"results": [{"index": 0}]},
    ],
)
async def test_api_reranker_rejects_bad_answers(srv: FakeOpenAIServer, answer: object) -> None:
    srv.rerank.script(answer, answer)
    reranker = OpenAILikeReranker("r", base_url=srv.base_url, retry=FAST)
    with pytest.raises(ProviderResponseError):
        await reranker.rerank("q", DOCS)
    assert len(srv.rerank.requests) == 2  # a malformed reply is retried once


async def test_api_reranker_skips_the_request_when_nothing_to_rank(srv: FakeOpenAIServer) -> None:
    reranker = OpenAILikeReranker("r", base_url=srv.base_url)
    assert await reranker.rerank("q", []) == []
    assert await reranker.rerank("q", DOCS, top_n=0) == []
    assert srv.rerank.requests == []


async def test_api_reranker_without_a_key_sends_no_authorization(
    srv: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # never read by the reranker
    reranker = OpenAILikeReranker(
        "r",
        base_url=srv.base_url,
        call_kwargs={"return_documents": False},
        extra_body={"truncate": True},
        headers={"X-Team": "search"},
    )
    assert ids(await reranker.rerank("Paris", DOCS[:2])) == ["d1", "d0"]
    sent = srv.requests[-1].headers
    assert "authorization" not in sent
    assert sent["x-team"] == "search"
    body = srv.rerank.requests[-1]
    assert (body["return_documents"], body["truncate"]) == (False, True)
    await reranker.aclose()


def test_api_reranker_needs_a_base_url() -> None:
    with pytest.raises(ProviderConfigError, match="base_url"):
        OpenAILikeReranker("r")


# --- LLMReranker --------------------------------------------------------------------------------


async def test_llm_reranker_orders_by_the_models_scores() -> None:
    llm = ScriptedLLM(['Sure! ```json\n{"1": 2, "2": 9, "3": 6}\n```'])
    reranker = LLMReranker().with_llm(llm)
    out = await reranker.rerank("capital of France", DOCS, top_n=2)
    assert [(h.id, h.score) for h in out] == [("d1", 9.0), ("d2", 6.0)]
    ((history, _),) = llm.requests
    assert history[0].role == MessageRole.SYSTEM and "JSON" in history[0].content
    assert history[1].content.startswith("Query: capital of France")
    assert "[1] Bananas are yellow fruit\n[2] The capital of France is Paris" in history[1].content


async def test_llm_reranker_retries_an_unreadable_reply_once() -> None:
    llm = ScriptedLLM(["they are all great", "[3, 1]"])
    reranker = LLMReranker().with_llm(llm)
    out = await reranker.rerank("q", DOCS)
    # a ranking: best first; the unranked document comes last with score 0
    assert [(h.id, h.score) for h in out] == [("d2", 2.0), ("d0", 1.0), ("d1", 0.0)]
    correction = llm.requests[1][0]
    assert correction[-2].content == "they are all great"
    assert "JSON object" in correction[-1].content

    failing = LLMReranker(max_retries=1).with_llm(ScriptedLLM(["no idea", "still none"]))
    with pytest.raises(FailedToParseOutput) as info:
        await failing.rerank("q", DOCS)
    assert info.value.raw == ["no idea", "still none"]


async def test_llm_reranker_bounds_what_it_sends() -> None:
    llm = ScriptedLLM(["1: 1\n2: 5"])
    reranker = LLMReranker(max_chars=10, max_documents=2).with_llm(llm)
    out = await reranker.rerank("q", DOCS)
    assert ids(out) == ["d1", "d0", "d2"]  # the third document was not sent and keeps its place
    sent = llm.requests[0][0][1].content
    assert "[1] Bananas a…" in sent and "[3]" not in sent


def test_parse_scores_understands_common_reply_shapes() -> None:
    assert parse_scores('{"1": 3, "doc 2": "7.5", "9": 1}', 2) == {0: 3.0, 1: 7.5}
    assert parse_scores('[{"id": 2, "score": 4}, {"id": 1, "score": 8}]', 2) == {1: 4.0, 0: 8.0}
    assert parse_scores("Scores:\n[1] -> 4\n[2] -> 10", 2) == {0: 4.0, 1: 10.0}
    with pytest.raises(ValueError):
        parse_scores("I cannot decide.", 3)


def test_llm_reranker_prompts_are_checkpointed(tmp_path: Path) -> None:
    reranker = LLMReranker()
    reranker.request.value = "Q={query}\n{documents}\n"
    reranker.save(tmp_path / "r.toml")
    loaded = LLMReranker().load(tmp_path / "r.toml")
    assert loaded.request.value == "Q={query}\n{documents}\n"
    assert loaded.prompt.prompt.value == reranker.prompt.prompt.value
    assert loaded.digest() == reranker.digest()
