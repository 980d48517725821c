"""RAGModule end to end: retrieval into the prompt, memory of plain questions, sessions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from promptimus.core import Session
from promptimus.dto import Message, MessageRole
from promptimus.embedders import HashingEmbedder, OpenAILikeEmbedder
from promptimus.llms.openai import OpenAILike
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules.memory import ResetMemoryContext
from promptimus.modules.rag import RAGModule
from promptimus.rerankers import OpenAILikeReranker
from promptimus.testing.fake_openai import FakeOpenAIServer
from promptimus.vector_stores import InMemoryVectorStore

FACTS = [
    "The Eiffel Tower is 330 metres tall.",
    "Mount Everest is 8849 metres high.",
    "Bananas are rich in potassium.",
]
TEMPLATE = "Use this:\n{context}\n---\nQ: {question}"


def answer_with_last_user_message(history: list[Message], kwargs: dict) -> str:
    return f"answer #{sum(m.role == MessageRole.USER for m in history)}"


async def make_rag(llm: ScriptedLLM, **kwargs: object) -> RAGModule:
    rag = RAGModule(
        memory_size=4,
        system_prompt="Answer briefly.",
        query_template=TEMPLATE,
        vector_store=InMemoryVectorStore(),
        embedder=HashingEmbedder(64),
        n_semantic=2,
        n_text=2,
        n_after_rerank=1,
        **kwargs,  # type: ignore[arg-type]
    ).with_llm(llm)
    await rag.retrieval.insert(FACTS)
    return rag


async def test_rag_sends_context_but_remembers_the_plain_question() -> None:
    llm = ScriptedLLM(answer_with_last_user_message)
    rag = await make_rag(llm)

    first = await rag("How tall is the Eiffel Tower?")
    assert first.content == "answer #1"
    ((sent, _),) = llm.requests
    assert [m.role for m in sent] == [MessageRole.SYSTEM, MessageRole.USER]
    assert sent[0].content == "Answer briefly."
    assert sent[1].content == f"Use this:\n{FACTS[0]}\n---\nQ: How tall is the Eiffel Tower?"

    await rag("And Mount Everest?")
    sent = llm.requests[1][0]
    assert [m.content for m in sent[1:3]] == ["How tall is the Eiffel Tower?", "answer #1"]
    assert sent[3].content == f"Use this:\n{FACTS[1]}\n---\nQ: And Mount Everest?"
    assert [m.content for m in rag.memory.as_list()] == [
        "How tall is the Eiffel Tower?",
        "answer #1",
        "And Mount Everest?",
        "answer #2",
    ]


async def test_memory_can_keep_the_stuffed_context() -> None:
    rag = await make_rag(ScriptedLLM(["ok"]), memory_stores_context=True)
    await rag("potassium?")
    assert rag.memory.as_list()[0].content == f"Use this:\n{FACTS[2]}\n---\nQ: potassium?"


async def test_memory_window_and_a_failed_call() -> None:
    llm = ScriptedLLM(["a1", "a2", "a3", RuntimeError("down")])
    rag = await make_rag(llm)
    for question in ("q1 Eiffel", "q2 Everest", "q3 bananas"):
        await rag(question)
    assert [m.content for m in rag.memory.as_list()] == ["q2 Everest", "a2", "q3 bananas", "a3"]
    with pytest.raises(RuntimeError):
        await rag("q4")
    assert len(rag.memory) == 4 and rag.memory.as_list()[-1].content == "a3"


async def test_sessions_keep_conversations_apart() -> None:
    llm = ScriptedLLM(answer_with_last_user_message, delay=0.01)
    rag = await make_rag(llm)

    async def talk(name: str) -> list[str]:
        with Session(name):
            await rag(f"{name}: Eiffel Tower?")
            await rag(f"{name}: Everest?")
            return [m.content for m in rag.memory.as_list()]

    alice, bob = await asyncio.gather(talk("alice"), talk("bob"))
    assert alice == ["alice: Eiffel Tower?", "answer #1", "alice: Everest?", "answer #2"]
    assert bob == ["bob: Eiffel Tower?", "answer #1", "bob: Everest?", "answer #2"]
    assert len(rag.memory) == 0  # nothing leaked into the default memory

    await rag("Eiffel?")
    with ResetMemoryContext(rag):
        assert len(rag.memory) == 0


async def test_templates_take_extra_fields_and_the_system_prompt_sees_the_context() -> None:
    llm = ScriptedLLM(["ok"])
    rag = RAGModule(
        system_prompt="Context: {context}",
        query_template="[{tone}] {question}",
        vector_store=InMemoryVectorStore(),
        embedder=HashingEmbedder(64),
        n_after_rerank=1,
    ).with_llm(llm)
    await rag.retrieval.insert(FACTS)
    await rag("bananas potassium", tone="casual")
    sent = llm.requests[0][0]
    assert sent[0].content == f"Context: {FACTS[2]}"
    assert sent[1].content == "[casual] bananas potassium"


async def test_checkpoint_round_trip_of_template_and_prompts(tmp_path: Path) -> None:
    rag = RAGModule(query_template='Docs:\n{context}\n\n"""{question}"""\n', n_semantic=4, n_text=0)
    rag.retrieval.n_after_rerank = 2
    rag.save(tmp_path / "rag.toml")
    loaded = RAGModule().load(tmp_path / "rag.toml")
    assert loaded.query_template.value == 'Docs:\n{context}\n\n"""{question}"""\n'
    # the retrieval counts are constructor arguments, as in the original: not in the file
    assert set(loaded.state_dict()) == {
        "query_template",
        "memory_module.prompt.prompt",
        "memory_module.prompt.role",
    }
    assert loaded.state_dict() == rag.state_dict()
    assert loaded.digest() == rag.digest()


async def test_rag_over_http_with_embeddings_reranking_and_chat_from_the_fake_server() -> None:
    with FakeOpenAIServer() as srv:
        srv.chat.script("The Eiffel Tower is 330 metres tall.")
        base, key = srv.base_url, srv.api_key
        embedder = OpenAILikeEmbedder("fake-embedding", api_key=key, base_url=base, batch_size=2)
        rag = RAGModule(
            vector_store=InMemoryVectorStore(),
            embedder=embedder,
            reranker=OpenAILikeReranker("fake-rerank", api_key=key, base_url=base),
            query_template=TEMPLATE,
            n_after_rerank=1,
        ).with_llm(OpenAILike("fake-model", api_key=key, base_url=base))
        await rag.retrieval.insert(FACTS)
        assert len(srv.embeddings.requests) == 2  # ceil(3 / 2) batched requests

        reply = await rag("How tall is the Eiffel Tower?")
        assert reply.content == "The Eiffel Tower is 330 metres tall."
        (rerank,) = srv.rerank.requests
        assert rerank["top_n"] == 1 and len(rerank["documents"]) == 3
        (chat,) = srv.chat.requests
        assert chat["messages"][-1]["content"].startswith(f"Use this:\n{FACTS[0]}\n---")
        assert rag.memory.as_list()[0].content == "How tall is the Eiffel Tower?"


async def test_an_original_query_template_with_query_and_a_separate_text_store() -> None:
    # promptimus 0.1 filled `{query}` and took `text_store=`: code written for it still works.
    llm = ScriptedLLM(answer_with_last_user_message)
    vectors, texts = InMemoryVectorStore(), InMemoryVectorStore()
    rag = RAGModule(
        query_template="Context:\n{context}\n\nQuestion: {query}",
        vector_store=vectors,
        text_store=texts,
        embedder=HashingEmbedder(64),
        n_semantic=1,
        n_text=1,
        n_after_rerank=2,
    ).with_llm(llm)
    assert rag.retrieval.text_store is texts
    await vectors.insert([[1.0] + [0.0] * 63], [FACTS[0]], ["v1"])
    await texts.insert_text_only([FACTS[2]], ["t1"])
    await rag("Bananas?")
    ((sent, _),) = llm.requests
    context = sent[-1].content.removeprefix("Context:\n").removesuffix("\n\nQuestion: Bananas?")
    assert sorted(context.split("\n\n")) == sorted([FACTS[0], FACTS[2]])  # one from each store


def test_text_store_beside_a_given_retrieval_is_refused() -> None:
    from promptimus.errors import InvalidArgument
    from promptimus.modules.retrieval import RetrievalModule

    with pytest.raises(InvalidArgument, match="text_store"):
        RAGModule(retrieval=RetrievalModule(), text_store=InMemoryVectorStore())
