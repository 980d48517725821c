"""RetrievalModule + the Chroma plugin against raw chromadb, with the fake server's embeddings.

    uv run python bench/retrieval.py [--docs 10000] [--queries 1000] [--batch-size 256]

Needs the Chroma plugin (``promptimus-chromadb-store``, a workspace member) and ``chromadb``.
The fake OpenAI server runs in its own process and embeds by feature hashing. Printed:

1. embeddings: requests made for the corpus (must be ceil(docs / batch size)) and docs/s;
2. store overhead, the same precomputed embeddings on both sides: ``RetrievalModule.insert_batch``
   and ``forward`` over ``ChromaVectorStore`` against raw ``collection.add`` / ``collection.query``
   (target <= 1.2x), best of ``--rounds``;
3. end to end, embeddings fetched over HTTP: the module with `OpenAILikeEmbedder` against the raw
   openai SDK + raw chromadb doing the same requests (same batch size and concurrency).

Each variant gets a fresh in-memory (ephemeral) Chroma collection. Not part of the test run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import math
import random
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from promptimus.embedders import OpenAILikeEmbedder
from promptimus.modules.retrieval import RetrievalModule, document_id
from promptimus.testing import FakeOpenAIServer

N_RESULTS = 10
CONCURRENCY = 4
_names = itertools.count()

SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "den", "gar", "pol", "ster", "ux")


def vocabulary(size: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words = {"".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))) for _ in range(size * 2)}
    return sorted(words)[:size]


WORDS = vocabulary(2000)


def corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"doc {i}: " + " ".join(rng.choices(WORDS, k=rng.randint(12, 40))) for i in range(n)]


class LookupEmbedder:
    """Returns precomputed vectors: the store comparison measures no embedding work at all."""

    model_name = "lookup"

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table

    async def aembed(self, text: str) -> list[float]:
        return self.table[text]

    async def aembed_batch(self, texts: list[str]) -> list[list[float]]:
        table = self.table
        return [table[text] for text in texts]


def new_collection(client: Any) -> Any:
    return client.create_collection(
        f"bench_raw_{next(_names)}",
        embedding_function=None,
        configuration={"hnsw": {"space": "cosine"}},
    )


def new_store(client: Any) -> Any:
    from chromadb_store import ChromaVectorStore

    return ChromaVectorStore(client, f"bench_module_{next(_names)}", space="cosine")


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def raw_add(
    collection: Any, client: Any, docs: list[str], vectors: list[list[float]], method: str = "add"
) -> None:
    """Raw chromadb ``add`` (or ``upsert``: what the store does, since ``add`` silently ignores
    ids that exist and would drop an update)."""
    ids = [document_id(doc) for doc in docs]  # the module hashes ids too: equal work
    write = getattr(collection, method)
    step = client.get_max_batch_size()
    for start in range(0, len(docs), step):
        end = start + step
        write(ids=ids[start:end], embeddings=vectors[start:end], documents=docs[start:end])


def raw_query(collection: Any, vector: list[float]) -> Any:
    return collection.query(
        query_embeddings=[vector],
        n_results=N_RESULTS,
        include=["documents", "metadatas", "distances"],
    )


def row(name: str, seconds: float, count: int, unit: str, base: float | None = None) -> None:
    ratio = f"{seconds / base:>7.3f}x" if base else f"{'':>8}"
    print(f"  {name:<34}{seconds:>8.2f} s{count / seconds:>12.0f} {unit}/s{ratio}")


async def bench(base_url: str, api_key: str, args: argparse.Namespace) -> None:
    import chromadb
    import openai

    docs, queries = corpus(args.docs, 1), corpus(args.queries, 2)
    client = chromadb.EphemeralClient()

    # 1. embeddings through the embedder
    embedder = OpenAILikeEmbedder(
        "fake-embedding", api_key, base_url, batch_size=args.batch_size, max_concurrency=CONCURRENCY
    )
    start = time.perf_counter()
    vectors = await embedder.aembed_batch(docs)
    seconds = time.perf_counter() - start
    expected = math.ceil(len(docs) / args.batch_size)
    verdict = "ok" if embedder.request_count == expected else "MISMATCH"
    print(f"\nembeddings: {len(docs)} docs, batch size {args.batch_size}")
    print(f"  requests made {embedder.request_count}, ceil(N/batch) = {expected}: {verdict}")
    row("OpenAILikeEmbedder.aembed_batch", seconds, len(docs), "docs")
    query_vectors = await embedder.aembed_batch(queries)
    table = dict(zip(docs, vectors, strict=True)) | dict(zip(queries, query_vectors, strict=True))

    # 2. store overhead with the same embeddings; 3. end to end over HTTP
    sdk = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    limit = asyncio.Semaphore(CONCURRENCY)

    async def sdk_embed(texts: list[str]) -> list[list[float]]:
        async with limit:
            reply = await sdk.embeddings.create(model="fake-embedding", input=texts)
        return [item.embedding for item in reply.data]

    def module_over(embedder: Any) -> RetrievalModule:
        store = new_store(client)
        return RetrievalModule(
            store, n_semantic=N_RESULTS, n_text=0, n_after_rerank=N_RESULTS
        ).with_embedder(embedder)

    async def store_raw(times: dict[str, float]) -> None:
        collection = new_collection(client)
        times["add"] = await timed(
            lambda: asyncio.to_thread(raw_add, collection, client, docs, vectors)
        )
        upserted = new_collection(client)
        times["upsert"] = await timed(
            lambda: asyncio.to_thread(raw_add, upserted, client, docs, vectors, "upsert")
        )

        async def queries_sync() -> None:
            for vector in query_vectors:
                raw_query(collection, vector)

        async def queries_in_thread() -> None:
            for vector in query_vectors:
                await asyncio.to_thread(raw_query, collection, vector)

        times["query"] = await timed(queries_sync)
        times["query in thread"] = await timed(queries_in_thread)

    async def store_module(times: dict[str, float]) -> None:
        module = module_over(LookupEmbedder(table))
        times["add"] = await timed(lambda: module.insert_batch(docs))
        times["query"] = await timed(lambda: run_queries(module))
        if len(await module(queries[0])) != N_RESULTS:
            raise RuntimeError("RetrievalModule returned fewer hits than asked for")

    async def run_queries(module: RetrievalModule) -> None:
        for query in queries:
            await module(query)

    async def http_raw(times: dict[str, float]) -> None:
        collection = new_collection(client)

        async def insert() -> None:
            chunks = [docs[i : i + args.batch_size] for i in range(0, len(docs), args.batch_size)]
            parts = await asyncio.gather(*(sdk_embed(chunk) for chunk in chunks))
            embedded = [v for part in parts for v in part]
            await asyncio.to_thread(raw_add, collection, client, docs, embedded)

        async def search() -> None:
            for query in queries:
                (vector,) = await sdk_embed([query])
                raw_query(collection, vector)

        times["add"] = await timed(insert)
        times["query"] = await timed(search)

    async def http_module(times: dict[str, float]) -> None:
        embedder = OpenAILikeEmbedder(
            "fake-embedding",
            api_key,
            base_url,
            batch_size=args.batch_size,
            max_concurrency=CONCURRENCY,
        )
        module = module_over(embedder)
        times["add"] = await timed(lambda: module.insert_batch(docs))
        times["requests"] = embedder.request_count
        times["query"] = await timed(lambda: run_queries(module))

    variants = {
        "store raw": store_raw,
        "store module": store_module,
        "http raw": http_raw,
        "http module": http_module,
    }
    best: dict[str, dict[str, float]] = {name: {} for name in variants}
    for round_index in range(args.rounds):
        order = list(variants.items())
        if round_index % 2:
            order.reverse()  # alternate who goes first, so warm-up and drift hit both sides
        for name, variant in order:
            times: dict[str, float] = {}
            await variant(times)
            for key, value in times.items():
                best[name][key] = min(best[name].get(key, math.inf), value)

    raw, mod = best["store raw"], best["store module"]
    print(f"\nstore overhead, same embeddings (best of {args.rounds}; ratio to raw chromadb)")
    row("raw collection.add", raw["add"], len(docs), "docs")
    row("raw collection.upsert", raw["upsert"], len(docs), "docs", raw["add"])
    row("RetrievalModule.insert_batch", mod["add"], len(docs), "docs", raw["add"])
    row("  same, ratio to raw upsert", mod["add"], len(docs), "docs", raw["upsert"])
    row("raw collection.query", raw["query"], len(queries), "queries")
    row(
        "raw collection.query in a thread",
        raw["query in thread"],
        len(queries),
        "queries",
        raw["query"],
    )
    row("RetrievalModule.forward", mod["query"], len(queries), "queries", raw["query"])

    raw, mod = best["http raw"], best["http module"]
    print(
        f"\nend to end, embeddings over HTTP (best of {args.rounds}; ratio to raw SDK + chromadb)"
    )
    verdict = "ok" if mod["requests"] == expected else "MISMATCH"
    print(f"  RetrievalModule.insert_batch: {int(mod['requests'])} embedding requests ({verdict})")
    row("raw SDK embed + collection.add", raw["add"], len(docs), "docs")
    row("RetrievalModule.insert_batch", mod["add"], len(docs), "docs", raw["add"])
    row("raw SDK embed + collection.query", raw["query"], len(queries), "queries")
    row("RetrievalModule.forward", mod["query"], len(queries), "queries", raw["query"])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the store comparison")
    args = parser.parse_args()
    try:
        import chromadb  # noqa: F401
        import chromadb_store  # noqa: F401
    except ImportError as exc:
        print(
            f"bench/retrieval.py needs chromadb and the Chroma plugin ({exc}).\n"
            "Install them with `uv sync --all-packages` (the plugin is the workspace member "
            "libs/chromadb-store) or `uv pip install -e libs/chromadb-store`.",
            file=sys.stderr,
        )
        raise SystemExit(2) from None
    print(f"{args.docs} documents, {args.queries} queries, top {N_RESULTS}, Chroma cosine space")
    with FakeOpenAIServer.spawn() as server:
        asyncio.run(bench(server.base_url, server.api_key, args))


if __name__ == "__main__":
    main()
