"""MemoryStore where the original's users put it: one object as vector and text store of a
RetrievalModule, under a RAGModule, with the offline embedder and over the fake OpenAI server."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
from pathlib import Path

from native_storage import MemoryStore

from promptimus.embedders import HashingEmbedder, OpenAILikeEmbedder
from promptimus.llms.openai import OpenAILike
from promptimus.modules import RAGModule, RetrievalModule
from promptimus.testing.fake_openai import FakeOpenAIServer
from promptimus.vector_stores import BaseSearchResult

FACTS = [
    "The Eiffel Tower is 330 metres tall.",
    "Mount Everest is 8849 metres high.",
    "Bananas are rich in potassium.",
    "Owls hunt at night and sleep by day.",
]


async def test_one_store_as_vector_and_text_store_of_a_retrieval_module() -> None:
    store = MemoryStore()
    retrieval = RetrievalModule(
        vector_store=store, text_store=store, n_semantic=2, n_text=2, n_after_rerank=3
    ).with_embedder(HashingEmbedder())
    ids = await retrieval.insert(FACTS)

    # each document is stored once, under one id (the original stored it twice: once per role)
    assert len(ids) == len(set(ids)) == len(store) == len(FACTS)
    assert set(store.docs) == set(ids)

    results = await retrieval.forward("How tall is the Eiffel Tower?")
    assert results[0].content == FACTS[0]
    assert results[0].idx == ids[0]
    assert all(type(r) is BaseSearchResult for r in results)
    assert len({r.idx for r in results}) == len(results) <= 3
    # reading the results as the original's RAGModule did
    assert "\n\n".join(r.content for r in results).startswith(FACTS[0])


async def test_both_sources_reach_the_fused_results() -> None:
    store = MemoryStore()
    retrieval = RetrievalModule(vector_store=store, text_store=store).with_embedder(
        HashingEmbedder()
    )
    await retrieval.insert(FACTS)
    # stored with the original's text_insert: no embedding, so only text search can return it
    text_only = await store.text_insert("Potassium keeps bananas famous.")

    hybrid = {r.idx for r in await retrieval.forward("potassium")}
    assert text_only in hybrid

    retrieval.n_text = 0  # semantic only: the text-only document cannot appear
    assert text_only not in {r.idx for r in await retrieval.forward("potassium")}

    retrieval.n_text, retrieval.n_semantic = 5, 0  # text only
    text_results = await retrieval.forward("potassium")
    assert {r.content for r in text_results} == {FACTS[2], "Potassium keeps bananas famous."}


async def test_delete_through_the_module_and_through_the_store() -> None:
    store = MemoryStore()
    retrieval = RetrievalModule(vector_store=store, text_store=store).with_embedder(
        HashingEmbedder()
    )
    ids = await retrieval.insert(FACTS)
    await retrieval.delete(ids[:2])
    await store.delete(ids[2])  # the original's single-id delete
    assert list(store.docs.values()) == [FACTS[3]]
    assert [r.content for r in await retrieval.forward("tower everest bananas owls")] == [FACTS[3]]


async def test_rag_over_the_fake_server_with_a_memory_store() -> None:
    with FakeOpenAIServer() as srv:
        srv.chat.script("It is 330 metres tall.")
        key, base = srv.api_key, srv.base_url
        store = MemoryStore()
        rag = RAGModule(
            vector_store=store,
            embedder=OpenAILikeEmbedder("fake-embedding", api_key=key, base_url=base),
            n_semantic=2,
            n_text=2,
            n_after_rerank=1,
        ).with_llm(OpenAILike("fake-model", api_key=key, base_url=base))
        await rag.retrieval.insert(FACTS)
        assert len(srv.embeddings.requests) == 1 and len(store) == len(FACTS)
        assert rag.retrieval.text_store is store  # hybrid without naming it twice

        reply = await rag("How tall is the Eiffel Tower?")
        assert reply.content == "It is 330 metres tall."
        (chat,) = srv.chat.requests
        sent = chat["messages"][-1]["content"]
        assert FACTS[0] in sent
        assert not any(fact in sent for fact in FACTS[1:])  # n_after_rerank=1


async def test_concurrent_queries_and_inserts_over_http_share_one_store() -> None:
    with FakeOpenAIServer() as srv:
        store = MemoryStore()
        retrieval = RetrievalModule(vector_store=store, text_store=store, n_after_rerank=1)
        retrieval.with_embedder(
            OpenAILikeEmbedder("fake-embedding", api_key=srv.api_key, base_url=srv.base_url)
        )
        await retrieval.insert(FACTS)
        extra = [f"Fact number {i} mentions the word zebra{i}." for i in range(20)]

        async def query(i: int) -> str:
            (hit,) = await retrieval.forward(f"zebra{i}")
            return hit.content

        await asyncio.wait_for(
            asyncio.gather(*(retrieval.insert([doc]) for doc in extra)), timeout=60
        )
        answers = await asyncio.wait_for(asyncio.gather(*(query(i) for i in range(20))), timeout=60)
        assert answers == extra
        assert len(store) == len(FACTS) + len(extra)


def test_the_readme_example_runs() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", readme, re.S)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    printed = output.getvalue()
    assert "Dogs bark at night." in printed
    assert printed.splitlines()[1].startswith("Owls hunt at night.")
