"""ChromaVectorStore on real embedded chromadb (persistent in a temp folder, no network)."""

from __future__ import annotations

import math
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings
from chromadb_store import ChromaVectorStore, to_chroma_where

from promptimus.errors import InvalidFilter, TextSearchUnsupported, VectorStoreError
from promptimus.vector_stores import InMemoryVectorStore, VectorStoreProtocol

SETTINGS = Settings(anonymized_telemetry=False)

DOCS = ["apple pie", "banana bread", "cherry tart", "plain water"]
IDS = ["a", "b", "c", "w"]
VECTORS = [[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]]
METAS = [
    {"kind": "fruit", "year": 2019, "sweet": True},
    {"kind": "fruit", "year": 2021, "sweet": True},
    {"kind": "fruit", "year": 2023},
    {"kind": "drink", "year": 2020, "sweet": False},
]


def open_client(path: Path) -> chromadb.ClientAPI:
    return chromadb.PersistentClient(path=str(path), settings=SETTINGS)


def restart(client: chromadb.ClientAPI, path: Path) -> chromadb.ClientAPI:
    """Drop the client and chromadb's per-path system cache, so the next client reads the disk."""
    client.clear_system_cache()
    return open_client(path)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "chroma"


async def filled(client: chromadb.ClientAPI, name: str = "docs", **kwargs) -> ChromaVectorStore:
    store = ChromaVectorStore(client, name, **kwargs)
    await store.insert(VECTORS, DOCS, IDS, METAS)
    return store


async def test_is_a_vector_store_that_never_embeds_by_itself(db: Path) -> None:
    store = ChromaVectorStore(open_client(db), "docs")
    assert isinstance(store, VectorStoreProtocol)
    assert store.space == "cosine"
    # No embedding function: chromadb has nothing to download, and text queries cannot happen.
    assert store.collection._embedding_function is None
    assert store.supports_text_search is False
    with pytest.raises(TextSearchUnsupported, match="text_store"):
        await store.text_search("apple")


async def test_data_survives_a_client_restart_and_delete_persists(db: Path) -> None:
    client = open_client(db)
    store = await filled(client, space="ip")
    before = await store.search([1.0, 0.1, 0.0], n_results=4)

    client = restart(client, db)
    reopened = ChromaVectorStore(client, "docs")  # no space given: the stored one is adopted
    assert reopened.space == "ip"
    assert await reopened.count() == 4
    after = await reopened.search([1.0, 0.1, 0.0], n_results=4)
    assert [h.id for h in after] == [h.id for h in before]
    assert [h.score for h in after] == pytest.approx([h.score for h in before])
    assert after[0].document == "apple pie" and after[0].metadata["year"] == 2019

    await reopened.delete(["b", "never-inserted"])
    client = restart(client, db)
    again = ChromaVectorStore(client, "docs")
    assert await again.count() == 3
    hits = await again.search([1.0, 0.1, 0.0], n_results=10)
    assert [h.id for h in hits] == ["a", "c", "w"]


@pytest.mark.parametrize(
    ("space", "expected"),
    [
        # query q = (1, 0.5, 0); documents as in VECTORS
        (
            "cosine",
            {"a": 1 / math.sqrt(1.25), "b": 1.1 / math.sqrt(1.25), "c": 0.5 / math.sqrt(1.25)},
        ),
        ("ip", {"a": 1.0, "b": 1.1, "c": 0.5, "w": 0.0}),
        (
            "l2",
            {"a": 1 / (1 + 0.25), "b": 1 / (1 + 0.05), "c": 1 / (1 + 1.25), "w": 1 / (1 + 5.25)},
        ),
    ],
)
async def test_scores_are_higher_is_better_in_every_space(
    db: Path, space: str, expected: dict[str, float]
) -> None:
    store = await filled(open_client(db), f"docs_{space}", space=space)
    assert store.space == space
    query = [1.0, 0.5, 0.0]
    hits = await store.search(query, n_results=4)
    assert hits[0].id == "b"  # the nearest document first, in every space
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    for hit in hits:
        if hit.id in expected:
            assert hit.score == pytest.approx(expected[hit.id], abs=1e-5), hit.id
    # The in-process store gives the same ranking and the same numbers.
    memory = InMemoryVectorStore(space=space, text_search=False)  # type: ignore[arg-type]
    await memory.insert(VECTORS, DOCS, IDS, METAS)
    reference = await memory.search(query, n_results=4)
    assert [h.id for h in reference] == [h.id for h in hits]
    assert [h.score for h in reference] == pytest.approx(scores, abs=1e-5)


async def test_zero_query_vector_scores_zero_in_cosine_space(db: Path) -> None:
    store = await filled(open_client(db))
    hits = await store.search([0.0, 0.0, 0.0], n_results=2)
    assert [h.score for h in hits] == pytest.approx([0.0, 0.0])


FILTERS = [
    {"kind": "fruit"},
    {"kind": "fruit", "year": {"$gte": 2021}},  # several keys: implicit AND
    {"year": {"$in": [2019, 2020]}},
    {"year": {"$nin": [2019, 2020]}},
    {"sweet": {"$ne": True}},  # "c" has no "sweet": $ne matches it, as in Chroma
    {"sweet": True},
    {"year": {"$lt": 2020}},
    {"$or": [{"kind": "drink"}]},  # one-item $or
    {"$or": [{"year": {"$gt": 2022}}, {"$and": [{"kind": "drink"}, {"sweet": False}]}]},
    {"kind": {"$eq": "tea"}},
    {"year": {"$in": [2019, 2023.0, "2021", True]}},  # mixed types: Chroma wants one per list
    {"year": {"$nin": [2019, 2020.0]}},
    {"sweet": {"$in": [True, 1]}},  # True is not 1
]


@pytest.mark.parametrize("where", FILTERS, ids=[str(f) for f in FILTERS])
async def test_metadata_filters_match_the_in_memory_store(db: Path, where: dict) -> None:
    store = await filled(open_client(db))
    memory = InMemoryVectorStore(text_search=False)
    await memory.insert(VECTORS, DOCS, IDS, METAS)
    query = [1.0, 0.2, 0.1]
    got = await store.search(query, n_results=10, where=where)
    want = await memory.search(query, n_results=10, where=where)
    assert [h.id for h in got] == [h.id for h in want]


async def test_filter_results_are_the_expected_documents(db: Path) -> None:
    store = await filled(open_client(db))
    hits = await store.search([1.0, 0.0, 0.0], n_results=10, where={"year": {"$gt": 2020}})
    assert {h.id for h in hits} == {"b", "c"}
    hits = await store.search([1.0, 0.0, 0.0], n_results=10, where={"sweet": {"$ne": True}})
    assert {h.id for h in hits} == {"c", "w"}


async def test_invalid_filter_is_refused_with_a_clear_error(db: Path) -> None:
    store = await filled(open_client(db))
    with pytest.raises(InvalidFilter, match=r"\$regex"):
        await store.search([1.0, 0.0, 0.0], where={"kind": {"$regex": "fr.*"}})
    with pytest.raises(InvalidFilter, match="compares numbers"):
        await store.search([1.0, 0.0, 0.0], where={"kind": {"$gt": "a"}})


def test_where_translation_to_chroma_form() -> None:
    assert to_chroma_where({"a": 1, "b": {"$gt": 2}}) == {"$and": [{"a": 1}, {"b": {"$gt": 2}}]}
    assert to_chroma_where({"$and": [{"a": 1}]}) == {"a": 1}
    assert to_chroma_where({"$or": [{"a": 1, "b": 2}, {"c": 3}]}) == {
        "$or": [{"$and": [{"a": 1}, {"b": 2}]}, {"c": 3}]
    }


async def test_insert_is_an_upsert_and_never_duplicates(db: Path) -> None:
    store = await filled(open_client(db))
    await store.insert([[1.0, 0.0, 0.0]], ["apple crumble"], ["a"], [{"kind": "dessert"}])
    # Duplicates inside one call: the last one wins (Chroma itself would reject the call).
    await store.insert(
        [[0.0, 1.0, 0.0], [0.0, 0.9, 0.1]], ["first", "second"], ["d", "d"], [{}, {"n": 2}]
    )
    assert await store.count() == 5
    hits = await store.search([1.0, 0.0, 0.0], n_results=1)
    assert (hits[0].id, hits[0].document, hits[0].metadata) == (
        "a",
        "apple crumble",
        {"kind": "dessert"},
    )
    d = [h for h in await store.search([0.0, 1.0, 0.0], n_results=5) if h.id == "d"]
    assert [(h.document, h.metadata) for h in d] == [("second", {"n": 2})]
    # Re-inserting without metadata leaves none behind (Chroma's upsert alone would merge).
    await store.insert([VECTORS[1]], ["banana loaf"], ["b"])
    fruit = await store.search([1.0, 0.0, 0.0], n_results=10, where={"kind": "fruit"})
    assert sorted(h.id for h in fruit) == ["c"]
    b = [h for h in await store.search(VECTORS[1], n_results=10) if h.id == "b"]
    assert [(h.document, h.metadata) for h in b] == [("banana loaf", {})]


async def test_no_results_are_dropped(db: Path) -> None:
    store = await filled(open_client(db))
    hits = await store.search([1.0, 0.0, 0.0], n_results=50)
    assert sorted(h.id for h in hits) == sorted(IDS)
    hits = await store.search([1.0, 0.0, 0.0], n_results=50, where={"kind": "fruit"})
    assert sorted(h.id for h in hits) == ["a", "b", "c"]
    assert await store.search([1.0, 0.0, 0.0], n_results=0) == []
    assert (await store.search([1.0, 0.0, 0.0], n_results=2))[1].id == "b"


async def test_inserts_larger_than_chromas_batch_limit_are_split(db: Path) -> None:
    client = open_client(db)
    limit = client.get_max_batch_size()
    n = limit + 7
    store = ChromaVectorStore(client, "big", space="l2")
    ids = [f"id{i}" for i in range(n)]
    vectors = [[float(i % 97), float(i // 97), 1.0] for i in range(n)]
    assert await store.insert(vectors, [f"doc {i}" for i in range(n)], ids) == ids
    assert await store.count() == n
    await store.delete(ids[: limit + 1])
    assert await store.count() == 6


async def test_empty_delete_deletes_nothing(db: Path) -> None:
    store = await filled(open_client(db))
    await store.delete([])
    assert await store.count() == 4


async def test_existing_collection_keeps_its_space(db: Path) -> None:
    client = open_client(db)
    await filled(client, space="l2")
    with pytest.raises(VectorStoreError, match="space='l2'"):
        ChromaVectorStore(client, "docs", space="cosine")
    legacy = ChromaVectorStore(client, "legacy", metadata={"hnsw:space": "ip", "owner": "me"})
    assert legacy.space == "ip"
    assert legacy.collection.metadata["owner"] == "me"


async def test_ephemeral_client_works_too() -> None:
    client = chromadb.EphemeralClient(settings=SETTINGS)
    store = await filled(client, "ephemeral_docs")
    try:
        assert [h.id for h in await store.search([0.0, 1.0, 0.0], n_results=2)] == ["c", "b"]
    finally:
        client.delete_collection("ephemeral_docs")
