"""RetrievalModule: batched inserts, hybrid dedup, fusion and reranking, knobs as Parameters."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptimus.core import Module
from promptimus.embedders import HashingEmbedder
from promptimus.errors import EmbedderNotSet, InvalidArgument, VectorStoreNotSet
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules.retrieval import RetrievalModule, document_id
from promptimus.rerankers import LLMReranker, RRFReranker
from promptimus.vector_stores import InMemoryVectorStore
from promptimus.vector_stores.base import SearchHit

CORPUS = [
    "The Eiffel Tower is in Paris, the capital of France.",
    "Bananas are rich in potassium.",
    "Mount Everest is the highest mountain on Earth.",
    "Paris has many museums, the Louvre is the largest.",
    "Potassium helps muscles work.",
]


class CountingEmbedder:
    """HashingEmbedder that records how it was called."""

    def __init__(self) -> None:
        self.inner = HashingEmbedder(64)
        self.batches: list[list[str]] = []
        self.singles: list[str] = []
        self.model_name = "counting"

    async def aembed(self, text: str) -> list[float]:
        self.singles.append(text)
        return await self.inner.aembed(text)

    async def aembed_batch(self, texts: list[str]) -> list[list[float]]:
        self.batches.append(list(texts))
        return await self.inner.aembed_batch(texts)


class RecordingReranker:
    """Reverses the candidates it gets and records them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[SearchHit], int | None]] = []

    async def rerank(
        self, query: str, hits: list[SearchHit], top_n: int | None = None
    ) -> list[SearchHit]:
        self.calls.append((query, list(hits), top_n))
        return list(reversed(hits))[:top_n]


def hybrid(**kwargs: object) -> tuple[RetrievalModule, InMemoryVectorStore, CountingEmbedder]:
    store = InMemoryVectorStore(text_search=True)
    embedder = CountingEmbedder()
    return RetrievalModule(store, embedder=embedder, **kwargs), store, embedder  # type: ignore[arg-type]


async def test_insert_batch_embeds_with_one_batched_call() -> None:
    retrieval, store, embedder = hybrid()
    ids = await retrieval.insert_batch(CORPUS)
    assert embedder.batches == [CORPUS] and embedder.singles == []
    assert ids == [document_id(doc) for doc in CORPUS]
    assert await store.count() == len(CORPUS)

    await retrieval.insert_batch(CORPUS * 2, chunk_size=4)  # 5 unique documents: 2 chunks
    assert [len(batch) for batch in embedder.batches[1:]] == [4, 1]


async def test_reinserting_a_document_never_duplicates_it() -> None:
    retrieval, store, embedder = hybrid()
    first = await retrieval.insert(CORPUS[0])
    again = await retrieval.insert([CORPUS[0], CORPUS[1], CORPUS[0]])
    assert again == [first[0], document_id(CORPUS[1]), first[0]]
    assert embedder.batches[-1] == [CORPUS[1], CORPUS[0]]  # each text embedded once
    assert await store.count() == 2
    hits = await retrieval("Eiffel Tower Paris")
    assert [h.id for h in hits].count(first[0]) == 1


async def test_hybrid_search_returns_each_document_once() -> None:
    retrieval, store, _ = hybrid(n_semantic=5, n_text=5, n_after_rerank=10)
    await retrieval.insert(CORPUS)
    # both searches find the Paris documents: they must be fused, not listed twice
    vector = await store.search(await HashingEmbedder(64).aembed("Paris museums"), 5)
    text = await store.text_search("Paris museums", 5)
    assert {h.id for h in vector} & {h.id for h in text}
    hits = await retrieval("Paris museums")
    assert (
        len({h.id for h in hits}) == len(hits) == len({h.id for h in vector} | {h.id for h in text})
    )
    assert hits[0].document == CORPUS[3]
    expected = RRFReranker().fuse([vector, text])
    assert [(h.id, h.score) for h in hits] == [(h.id, h.score) for h in expected]


async def test_separate_text_store_gets_the_same_ids() -> None:
    vectors = InMemoryVectorStore(text_search=False)
    texts = InMemoryVectorStore(text_search=True)
    retrieval = RetrievalModule(
        vectors, texts, n_semantic=3, n_text=3, embedder=HashingEmbedder(64)
    )
    ids = await retrieval.insert(CORPUS, metadatas=[{"n": i} for i in range(len(CORPUS))])
    assert await vectors.count() == await texts.count() == len(CORPUS)
    assert {h.id for h in await texts.text_search("potassium", 5)} == {ids[1], ids[4]}
    hits = await retrieval("potassium muscles")
    assert len({h.id for h in hits}) == len(hits)
    assert hits[0].id == ids[4] and hits[0].metadata == {"n": 4}

    await retrieval.delete([ids[4]])
    assert await vectors.count() == await texts.count() == len(CORPUS) - 1


async def test_a_store_without_text_search_is_searched_semantically_only() -> None:
    store = InMemoryVectorStore(text_search=False)  # text_search() would raise
    retrieval = RetrievalModule(store, embedder=HashingEmbedder(64), n_after_rerank=2)
    assert retrieval.text_store is None
    await retrieval.insert(CORPUS)
    hits = await retrieval("highest mountain")
    assert len(hits) == 2 and hits[0].document == CORPUS[2]
    assert -1.0 <= hits[1].score < hits[0].score <= 1.0  # cosine scores, not RRF


async def test_n_parameters_switch_sources_and_cut_results() -> None:
    retrieval, _, embedder = hybrid(n_semantic=0, n_text=3, n_after_rerank=1)
    await retrieval.insert(CORPUS)
    hits = await retrieval("potassium")
    assert len(hits) == 1 and "otassium" in hits[0].document
    assert embedder.singles == []  # no semantic search, no query embedding
    retrieval.n_after_rerank = 0
    assert await retrieval("potassium") == []
    retrieval.n_semantic = -1
    with pytest.raises(InvalidArgument, match="n_semantic"):
        await retrieval("potassium")


async def test_where_filters_both_sources() -> None:
    retrieval, _, _ = hybrid()
    await retrieval.insert(
        CORPUS, metadatas=[{"topic": t} for t in ["geo", "food", "geo", "geo", "food"]]
    )
    hits = await retrieval("potassium Paris", where={"topic": "food"})
    assert {h.document for h in hits} == {CORPUS[1], CORPUS[4]}


async def test_reranker_from_an_ancestor_reranks_the_fused_candidates() -> None:
    class App(Module):
        def __init__(self) -> None:
            super().__init__()
            self.search = RetrievalModule(n_semantic=3, n_text=3, n_after_rerank=2)

        async def forward(self, query: str) -> list[SearchHit]:
            return await self.search(query)

    reranker = RecordingReranker()
    store = InMemoryVectorStore()
    app = App().with_vector_store(store).with_embedder(HashingEmbedder(64)).with_reranker(reranker)
    await app.search.insert(CORPUS)
    hits = await app("Paris museums")
    ((query, candidates, top_n),) = reranker.calls
    assert query == "Paris museums" and top_n == 2
    assert len({h.id for h in candidates}) == len(candidates) >= 3  # deduplicated before reranking
    assert [h.id for h in hits] == [h.id for h in reversed(candidates)][:2]


async def test_a_fusion_reranker_replaces_the_default_fusion() -> None:
    retrieval, _, _ = hybrid(n_after_rerank=3, reranker=RRFReranker(k=0))
    await retrieval.insert(CORPUS)
    hits = await retrieval("Paris museums")
    assert hits[0].score == 2.0  # 1/(0+1) + 1/(0+1): rank 1 in both lists
    assert "reranker_module" in dict(retrieval.named_children())


async def test_llm_reranker_module_is_registered_and_finds_the_parents_llm() -> None:
    llm = ScriptedLLM(['{"1": 1, "2": 10}'])
    retrieval, _, _ = hybrid(n_semantic=2, n_text=0, n_after_rerank=1, reranker=LLMReranker())
    retrieval.with_llm(llm)
    await retrieval.insert(CORPUS[:2])
    (best,) = await retrieval("Eiffel Tower")
    assert best.score == 10.0
    assert len(llm.requests) == 1
    assert "reranker_module.request" in retrieval.state_dict()


async def test_knobs_add_no_checkpoint_keys_like_the_original(tmp_path: Path) -> None:
    # the original kept these as plain attributes; the same keys let either library load the file
    retrieval = RetrievalModule(n_semantic=7, n_text=0, n_after_rerank=3, fusion_k=20)
    assert retrieval.state_dict() == {}
    assert (retrieval.n_semantic, retrieval.n_text, retrieval.n_after_rerank) == (7, 0, 3)
    retrieval.save(tmp_path / "retrieval.toml")
    loaded = RetrievalModule().load(tmp_path / "retrieval.toml")
    assert loaded.digest() == retrieval.digest()


async def test_bad_inserts_fail_before_touching_the_store() -> None:
    retrieval, store, embedder = hybrid()
    with pytest.raises(InvalidArgument, match="2 ids for 1 documents"):
        await retrieval.insert_batch(["a"], ids=["x", "y"])
    with pytest.raises(InvalidArgument, match="two different documents"):
        await retrieval.insert_batch(["a", "b"], ids=["x", "x"])
    with pytest.raises(InvalidArgument, match="documents\\[1\\]"):
        await retrieval.insert_batch(["a", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidArgument):
        await retrieval.insert(["a", "b"], ids="x")
    assert embedder.batches == [] and await store.count() == 0


async def test_missing_providers_name_the_module() -> None:
    with pytest.raises(VectorStoreNotSet, match="with_vector_store"):
        await RetrievalModule(embedder=HashingEmbedder()).insert("text")
    with pytest.raises(EmbedderNotSet, match="with_embedder"):
        await RetrievalModule(InMemoryVectorStore()).insert("text")
