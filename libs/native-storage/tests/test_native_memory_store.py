"""MemoryStore: the original's per-document API on InMemoryVectorStore — results, deletes, bad
input, concurrency from tasks and threads, and both store interfaces on one object."""

from __future__ import annotations

import asyncio
import math
import threading
import uuid
from pathlib import Path

import pytest
from native_storage import MemoryStore

from promptimus.errors import (
    InvalidArgument,
    InvalidEmbedding,
    InvalidFilter,
    PromptimusError,
)
from promptimus.vector_stores import (
    BaseSearchResult,
    InMemoryVectorStore,
    PerDocumentTextStoreProtocol,
    PerDocumentVectorStoreProtocol,
    VectorStoreProtocol,
)

NORTH, EAST, NORTH_EAST = [0.0, 1.0], [1.0, 0.0], [math.sqrt(0.5), math.sqrt(0.5)]


async def test_vector_insert_returns_fresh_uuid_ids_and_vector_search_ranks_by_cosine() -> None:
    store = MemoryStore()
    north = await store.vector_insert(NORTH, "north")
    east = await store.vector_insert(EAST, "east")
    diagonal = await store.vector_insert(NORTH_EAST, "north east")
    assert len({north, east, diagonal}) == 3
    assert all(str(uuid.UUID(i)) == i for i in (north, east, diagonal))

    hits = await store.vector_search([0.1, 1.0], n_results=2)
    assert [(h.idx, h.content) for h in hits] == [(north, "north"), (diagonal, "north east")]
    assert all(type(h) is BaseSearchResult for h in hits)
    assert hits[0].score == pytest.approx(1.0 / math.sqrt(1.01), rel=1e-6)
    assert hits[0].score > hits[1].score
    assert await store.vector_search(EAST, n_results=0) == []
    assert len(await store.vector_search(EAST, n_results=10)) == 3


async def test_text_insert_is_found_by_text_search_only() -> None:
    store = MemoryStore()
    vector_doc = await store.vector_insert(NORTH, "owls hunt at night")
    text_doc = await store.text_insert("Bats hunt at night, too.")
    hits = await store.text_search("night", n_results=5)
    assert {h.idx for h in hits} == {vector_doc, text_doc}  # every document is text-searchable
    assert all(type(h) is BaseSearchResult and h.score > 0 for h in hits)
    assert await store.text_search("giraffe", n_results=5) == []  # only documents sharing a word
    assert [h.idx for h in await store.vector_search(NORTH, n_results=5)] == [vector_doc]
    assert store.docs == {vector_doc: "owls hunt at night", text_doc: "Bats hunt at night, too."}
    assert await store.count() == 2


async def test_delete_takes_one_id_or_a_list_and_ignores_unknown_ones() -> None:
    store = MemoryStore()
    a = await store.vector_insert(NORTH, "alpha word")
    b = await store.text_insert("beta word")
    c = await store.vector_insert(EAST, "gamma word")
    await store.delete(a)
    assert {h.idx for h in await store.text_search("word", n_results=5)} == {b, c}
    assert [h.idx for h in await store.vector_search(NORTH, n_results=5)] == [c]
    await store.delete([b, c, "not-an-id"])
    await store.delete("not-an-id")
    assert len(store) == 0 and store.docs == {}
    assert await store.text_search("word", n_results=5) == []


async def test_metadata_and_where_filters_work_on_both_kinds() -> None:
    store = MemoryStore()
    en = await store.vector_insert(NORTH, "night owl", metadata={"lang": "en"})
    de = await store.text_insert("night eule", metadata={"lang": "de"})
    assert [h.idx for h in await store.text_search("night", where={"lang": "de"})] == [de]
    assert [h.idx for h in await store.vector_search(NORTH, where={"lang": "en"})] == [en]
    assert (await store.text_search("owl"))[0].metadata == {"lang": "en"}


async def test_one_object_satisfies_the_original_and_the_current_store_interfaces() -> None:
    store = MemoryStore()
    assert isinstance(store, PerDocumentVectorStoreProtocol)
    assert isinstance(store, PerDocumentTextStoreProtocol)
    assert isinstance(store, VectorStoreProtocol)
    assert isinstance(store, InMemoryVectorStore)
    assert store.supports_text_search
    # the batch API sees what the per-document API stored, and the other way round
    idx = await store.vector_insert(NORTH, "from the original api")
    await store.insert([EAST], ["from the batch api"], ["batch-1"])
    assert {h.id for h in await store.search(NORTH_EAST, n_results=5)} == {idx, "batch-1"}
    assert [h.idx for h in await store.text_search("batch")] == ["batch-1"]


# --- bad input -----------------------------------------------------------------------------------


async def filled() -> MemoryStore:
    store = MemoryStore()
    await store.vector_insert(NORTH, "north")
    await store.text_insert("some text")
    return store


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda s: s.vector_insert([NORTH, EAST], "two at once"),
            InvalidEmbedding,
            "one embedding",
        ),
        (lambda s: s.vector_insert("0.1 0.2", "text"), InvalidEmbedding, "one embedding"),
        (lambda s: s.vector_insert(None, "text"), InvalidEmbedding, "one embedding"),
        (lambda s: s.vector_insert([1.0, 0.0, 0.0], "wrong length"), InvalidEmbedding, "length"),
        (lambda s: s.vector_insert([], "empty"), InvalidEmbedding, "length 2"),
        (lambda s: s.vector_insert([math.nan, 1.0], "nan"), InvalidEmbedding, "NaN"),
        (lambda s: s.vector_insert(["a", "b"], "words"), InvalidEmbedding, "numbers"),
        (lambda s: s.vector_insert(NORTH, 42), InvalidArgument, "documents must be str"),
        (lambda s: s.vector_insert(NORTH, "x", metadata={"k": {}}), InvalidArgument, "not allowed"),
        (lambda s: s.text_insert(None), InvalidArgument, "documents must be str"),
        (lambda s: s.text_insert("x", metadata="meta"), InvalidArgument, "dict"),
        (lambda s: s.vector_search([1.0, 0.0, 0.0], 3), InvalidEmbedding, "length"),
        (lambda s: s.vector_search([NORTH], 3), InvalidEmbedding, "one embedding"),
        (lambda s: s.vector_search(NORTH, -1), InvalidArgument, "n_results"),
        (lambda s: s.vector_search(NORTH, 2, where={"$not": {}}), InvalidFilter, "operator"),
        (lambda s: s.text_search(b"bytes", 3), InvalidArgument, "str query"),
        (lambda s: s.text_search("text", "3"), InvalidArgument, "n_results"),
        (lambda s: s.delete(7), InvalidArgument, "an id"),
        (lambda s: s.delete([None]), InvalidArgument, "an id"),
    ],
)
async def test_bad_input_raises_a_named_error_and_stores_nothing(call, error, match) -> None:  # type: ignore[no-untyped-def]
    store = await filled()
    before = store.docs
    with pytest.raises(error, match=match) as caught:
        await call(store)
    assert isinstance(caught.value, PromptimusError)
    assert store.docs == before
    assert [h.content for h in await store.vector_search(NORTH, 5)] == ["north"]


# --- concurrency ---------------------------------------------------------------------------------


async def test_many_concurrent_inserts_searches_and_deletes_lose_nothing() -> None:
    store = MemoryStore()
    n = 300

    async def add(i: int) -> tuple[str, str]:
        angle = 2 * math.pi * i / n
        vector_id = await store.vector_insert([math.cos(angle), math.sin(angle)], f"vec{i} shared")
        text_id = await store.text_insert(f"txt{i} shared")
        hits = await store.text_search(f"vec{i}", n_results=3)  # reads interleaved with writes
        assert [h.idx for h in hits] == [vector_id]
        await store.vector_search([1.0, 0.0], n_results=5)
        return vector_id, text_id

    pairs = await asyncio.wait_for(asyncio.gather(*(add(i) for i in range(n))), timeout=60)
    ids = [i for pair in pairs for i in pair]
    assert len(set(ids)) == 2 * n == len(store)
    assert len(await store.text_search("shared", n_results=10 * n)) == 2 * n
    assert len(await store.vector_search([0.0, 1.0], n_results=10 * n)) == n

    doomed = [vector_id for vector_id, _ in pairs[::2]]
    await asyncio.wait_for(asyncio.gather(*(store.delete(i) for i in doomed)), timeout=60)
    assert len(store) == 2 * n - len(doomed)
    survivors = {h.idx for h in await store.vector_search([0.0, 1.0], n_results=10 * n)}
    assert survivors == {vector_id for vector_id, _ in pairs[1::2]}


def test_threads_with_their_own_event_loops_share_one_store() -> None:
    store = MemoryStore()
    per_thread, threads = 150, 4
    results: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def worker(t: int) -> None:
        async def run() -> list[str]:
            ids = []
            for i in range(per_thread):
                if i % 2:
                    ids.append(await store.text_insert(f"t{t}x{i} common"))
                else:
                    ids.append(await store.vector_insert([1.0, float(t), float(i)], f"t{t}x{i}"))
                await store.text_search("common", n_results=3)
            return ids

        try:
            results[t] = asyncio.run(run())
        except BaseException as exc:
            errors.append(exc)

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in pool)
    assert errors == []
    assert len(store) == per_thread * threads
    docs = store.docs
    for t, ids in results.items():
        for i, doc_id in enumerate(ids):
            assert docs[doc_id].startswith(f"t{t}x{i}")
    # the BM25 index agrees with the documents: each unique word finds exactly its document
    assert [h.idx for h in asyncio.run(store.text_search("t2x7", n_results=5))] == [results[2][7]]
    assert len(asyncio.run(store.text_search("common", n_results=10_000))) == (
        per_thread // 2 * threads
    )


# --- persistence ---------------------------------------------------------------------------------


async def test_saved_and_loaded_as_a_memory_store(tmp_path: Path) -> None:
    path = tmp_path / "memory.zip"
    store = MemoryStore(path=path)
    vector_id = await store.vector_insert(NORTH, "north star")
    text_id = await store.text_insert("a star chart")
    loaded = MemoryStore.load(path)
    assert type(loaded) is MemoryStore
    assert loaded.docs == {vector_id: "north star", text_id: "a star chart"}
    hits = await loaded.text_search("star", n_results=5)
    assert {h.idx for h in hits} == {vector_id, text_id}
    assert all(type(h) is BaseSearchResult for h in hits)
    assert [h.idx for h in await loaded.vector_search(NORTH, n_results=5)] == [vector_id]
