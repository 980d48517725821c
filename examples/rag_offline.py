"""Retrieval-augmented answers, fully offline: no API key, no network, no model download.

    python3 -m uv run --no-dev --extra numpy examples/rag_offline.py

OFFLINE AND LEXICAL: `HashingEmbedder` embeds by hashing words and word pieces, so it matches
shared words, not meaning ("car" does not find "automobile"). The "LLM" is a `ScriptedLLM` that
answers with the first retrieved document. Swap in `OpenAILikeEmbedder` and `OpenAILike` (or
`promptimus.llms` model strings) for real semantic search and real answers; nothing else changes.
"""

from __future__ import annotations

import asyncio

from promptimus.dto import Message
from promptimus.embedders import HashingEmbedder
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules.rag import RAGModule
from promptimus.vector_stores import InMemoryVectorStore

DOCUMENTS = [
    "The Eiffel Tower in Paris is 330 metres tall and was finished in 1889.",
    "Mount Everest, on the border of Nepal and China, is 8,849 metres high.",
    "The Great Barrier Reef lies off the coast of Queensland, Australia.",
    "Bananas are berries; strawberries, botanically, are not.",
    "Python was first released by Guido van Rossum in 1991.",
]

TEMPLATE = "Context:\n{context}\n\nQuestion: {question}"


def extractive_answer(history: list[Message], kwargs: dict[str, object]) -> str:
    """Stands in for a model: replies with the first line of the context it was given."""
    stuffed = history[-1].content
    context = stuffed.split("Context:\n", 1)[1].split("\n\nQuestion:", 1)[0]
    return f"From my notes: {context.splitlines()[0]}"


async def main() -> None:
    rag = RAGModule(
        memory_size=6,
        system_prompt="Answer from the context only.",
        query_template=TEMPLATE,
        vector_store=InMemoryVectorStore(text_search=True),  # hybrid: vectors + BM25, fused by id
        embedder=HashingEmbedder(),
        n_after_rerank=2,
    ).with_llm(ScriptedLLM(extractive_answer))

    await rag.retrieval.insert(DOCUMENTS)
    await rag.retrieval.insert(DOCUMENTS[0])  # same text, same id: still one document

    print("retrieved for 'How tall is the Eiffel Tower?':")
    for hit in await rag.retrieval("How tall is the Eiffel Tower?"):
        print(f"  {hit.score:.4f}  {hit.document}")

    for question in ("How tall is the Eiffel Tower?", "Who released Python, and when?"):
        reply = await rag(question)
        print(f"\nQ: {question}\nA: {reply.content}")

    print("\nmemory keeps the plain questions, not the stuffed context:")
    for message in rag.memory.as_list():
        print(f"  {message.role.value:>9}: {message.content}")

    print("\ncheckpoint (tunable knobs and prompts):\n")
    print(rag.describe())


if __name__ == "__main__":
    asyncio.run(main())
