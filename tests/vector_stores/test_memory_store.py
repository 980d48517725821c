"""InMemoryVectorStore: exact vector search, BM25 text search, filters, upsert, delete, files."""

from __future__ import annotations

import asyncio
import math
import os
import random
from pathlib import Path

import pytest

from promptimus.errors import (
    InvalidArgument,
    InvalidEmbedding,
    InvalidFilter,
    TextSearchUnsupported,
    VectorStoreError,
)
from promptimus.ops import cosine, dot
from promptimus.vector_stores import InMemoryVectorStore, SearchHit, VectorStoreProtocol

DOCS = ["apple pie", "banana bread", "cherry tart", "plain water"]
IDS = ["a", "b", "c", "w"]
VECTORS = [[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]]
METAS = [
    {"kind": "fruit", "year": 2019, "sweet": True},
    {"kind": "fruit", "year": 2021, "sweet": True},
    {"kind": "fruit", "year": 2023},
    {"kind": "drink", "year": 2020, "sweet": False},
]


async def filled(**kwargs) -> InMemoryVectorStore:
    store = InMemoryVectorStore(**kwargs)
    await store.insert(VECTORS, DOCS, IDS, METAS)
    return store


# --- vector search ----------------------------------------------------------------------------


async def test_cosine_scores_are_cosine_similarities_best_first() -> None:
    store = await filled()
    assert isinstance(store, VectorStoreProtocol)
    query = [1.0, 0.5, 0.0]
    hits = await store.search(query, n_results=3)
    assert [h.id for h in hits] == ["b", "a", "c"]
    for hit in hits:
        assert hit.score == pytest.approx(cosine(query, VECTORS[IDS.index(hit.id)]), abs=1e-6)
    assert hits[0] == SearchHit("b", "banana bread", hits[0].score, METAS[1])


async def test_ip_and_l2_scores() -> None:
    query = [1.0, 0.5, 0.0]
    ip = await (await filled(space="ip")).search(query, n_results=4)
    assert [(h.id, round(h.score, 5)) for h in ip] == [
        ("b", 1.1),
        ("a", 1.0),
        ("c", 0.5),
        ("w", 0.0),
    ]
    l2 = await (await filled(space="l2")).search(query, n_results=4)
    expected = {
        doc_id: 1 / (1 + sum((x - y) ** 2 for x, y in zip(query, v, strict=True)))
        for doc_id, v in zip(IDS, VECTORS, strict=True)
    }
    assert [h.id for h in l2] == ["b", "a", "c", "w"]
    for hit in l2:
        assert hit.score == pytest.approx(expected[hit.id], abs=1e-6)


async def test_zero_vectors_score_zero_not_nan() -> None:
    store = InMemoryVectorStore(text_search=False)
    await store.insert([[0.0, 0.0], [1.0, 0.0]], ["empty", "x"], ["z", "x"])
    hits = await store.search([1.0, 0.0], n_results=2)
    assert [(h.id, h.score) for h in hits] == [("x", pytest.approx(1.0)), ("z", 0.0)]
    assert [h.score for h in await store.search([0.0, 0.0])] == [0.0, 0.0]


async def test_top_k_matches_brute_force_on_a_larger_corpus() -> None:
    rng = random.Random(7)
    vectors = [[rng.gauss(0, 1) for _ in range(16)] for _ in range(600)]
    ids = [f"d{i}" for i in range(600)]
    for space, score in (("cosine", cosine), ("ip", dot)):
        store = InMemoryVectorStore(space=space, text_search=False)  # type: ignore[arg-type]
        await store.insert(vectors, ids, ids)
        query = [rng.gauss(0, 1) for _ in range(16)]
        brute = sorted(ids, key=lambda i: -score(query, vectors[int(i[1:])]))[:10]
        hits = await store.search(query, n_results=10)
        assert [h.id for h in hits] == brute
        assert len(await store.search(query, n_results=1000)) == 600  # capped, nothing dropped


async def test_bad_shapes_are_refused() -> None:
    store = await filled()
    with pytest.raises(InvalidEmbedding, match="length 3"):
        await store.insert([[1.0, 2.0]], ["short"], ["s"])
    with pytest.raises(InvalidEmbedding, match="length 3"):
        await store.search([1.0, 2.0])
    with pytest.raises(InvalidArgument, match="one embedding, document and metadata per id"):
        await store.insert([[1.0, 0.0, 0.0]], ["one", "two"], ["x", "y"])
    with pytest.raises(InvalidEmbedding, match="NaN"):
        await store.insert([[math.nan, 0.0, 0.0]], ["nan"], ["n"])
    with pytest.raises(InvalidArgument, match="metadata"):
        await store.insert([[1.0, 0.0, 0.0]], ["x"], ["x"], [{"tags": ["a", "b"]}])
    assert await store.count() == 4


# --- filters ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ({"kind": "fruit"}, {"a", "b", "c"}),
        ({"kind": "fruit", "year": {"$gte": 2021}}, {"b", "c"}),
        ({"year": {"$in": [2019, 2020]}}, {"a", "w"}),
        ({"year": {"$nin": [2019, 2020]}}, {"b", "c"}),
        ({"sweet": {"$ne": True}}, {"c", "w"}),  # a missing key passes $ne, as in Chroma
        ({"sweet": 1}, set()),  # True is not 1
        ({"year": 2019.0}, {"a"}),  # but 2019 is 2019.0
        ({"year": {"$lt": 2020}}, {"a"}),
        ({"$or": [{"kind": "drink"}, {"year": {"$gt": 2022}}]}, {"c", "w"}),
        ({"$and": [{"kind": "fruit"}, {"$or": [{"year": 2019}, {"year": 2023}]}]}, {"a", "c"}),
    ],
)
async def test_filters(where: dict, expected: set[str]) -> None:
    store = await filled()
    hits = await store.search([1.0, 1.0, 1.0], n_results=10, where=where)
    assert {h.id for h in hits} == expected
    text_hits = await store.text_search("apple banana cherry water", n_results=10, where=where)
    assert {h.id for h in text_hits} == expected


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({"kind": {"$regex": "f.*"}}, r"unknown operator '\$regex'"),
        ({"$not": {"kind": "fruit"}}, r"unknown logical operator '\$not'"),
        ({"$and": []}, "non-empty list"),
        ({"year": {"$gt": "2020"}}, "compares numbers"),
        ({"year": {"$gt": 1, "$lt": 3}}, "exactly one operator"),
        ({"kind": ["fruit"]}, "must be a str, int, float or bool"),
        ({}, "where=None"),
    ],
)
async def test_invalid_filters_say_what_to_do(where: dict, message: str) -> None:
    store = await filled()
    with pytest.raises(InvalidFilter, match=message):
        await store.search([1.0, 0.0, 0.0], where=where)


# --- text search -----------------------------------------------------------------------------


async def test_bm25_numbers() -> None:
    store = InMemoryVectorStore()
    await store.insert([[1.0]] * 3, ["cat cat dog", "Dog!", "bird"], ["d1", "d2", "d3"])
    # N=3, avgdl=5/3, k1=1.5, b=0.75; "cat": df=1 in d1 (tf=2, dl=3)
    idf_cat = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    norm_d1 = 1.5 * (1 - 0.75 + 0.75 * 3 / (5 / 3))
    hits = await store.text_search("CAT")
    assert [h.id for h in hits] == ["d1"]  # documents without any query word are not returned
    assert hits[0].score == pytest.approx(idf_cat * 2 * 2.5 / (2 + norm_d1))
    # "dog" is in two documents: the shorter one ranks first.
    idf_dog = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    hits = await store.text_search("dog")
    assert [h.id for h in hits] == ["d2", "d1"]
    assert hits[0].score == pytest.approx(idf_dog * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 1 / (5 / 3))))
    assert await store.text_search("fish") == []
    assert len(await store.text_search("cat dog bird", n_results=2)) == 2


async def test_text_search_can_be_switched_off() -> None:
    store = await filled(text_search=False)
    assert store.supports_text_search is False
    with pytest.raises(TextSearchUnsupported, match="text_search=True"):
        await store.text_search("apple")


# --- upsert and delete -----------------------------------------------------------------------


async def test_insert_is_an_upsert_in_vectors_and_text() -> None:
    store = await filled()
    await store.insert([[0.0, 0.0, 1.0]], ["apple crumble"], ["a"], [{"kind": "dessert"}])
    assert await store.count() == 4
    top = (await store.search([0.0, 0.0, 1.0], n_results=1))[0]
    assert (top.id, top.document, top.metadata) == ("a", "apple crumble", {"kind": "dessert"})
    assert [h.id for h in await store.text_search("pie")] == []  # the old words are gone
    assert [h.id for h in await store.text_search("crumble")] == ["a"]
    assert {h.id for h in await store.search([1, 1, 1], where={"kind": "fruit"})} == {"b", "c"}
    # Repeated ids in one call: the last occurrence wins.
    await store.insert([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], ["first", "second"], ["d", "d"])
    assert await store.count() == 5
    assert [h.document for h in store.get(["d"]) if h] == ["second"]


async def test_delete_removes_from_every_index_and_keeps_the_rest_intact() -> None:
    store = await filled()
    await store.delete(["a", "unknown"])  # "a" is row 0: the last row moves into its place
    assert await store.count() == 3
    hits = await store.search([1.0, 0.1, 0.05], n_results=10)
    assert [h.id for h in hits] == ["b", "c", "w"]
    assert [h.document for h in hits] == ["banana bread", "cherry tart", "plain water"]
    assert hits[2].metadata == METAS[3]
    assert await store.text_search("apple") == []
    assert store.get(["a", "w"])[0] is None
    await store.delete([])
    assert await store.count() == 3
    await store.insert([VECTORS[0]], ["apple pie again"], ["a"])
    assert [h.id for h in await store.search([1.0, 0.0, 0.0], n_results=1)] == ["a"]


async def test_concurrent_inserts_lose_nothing() -> None:
    store = InMemoryVectorStore()
    await asyncio.gather(
        *(store.insert([[float(i), 1.0]], [f"doc {i}"], [f"id{i}"]) for i in range(50))
    )
    assert await store.count() == 50
    assert len(await store.search([1.0, 1.0], n_results=100)) == 50


# --- persistence -----------------------------------------------------------------------------


async def test_save_and_load_round_trip(tmp_path: Path) -> None:
    store = await filled(space="ip")
    path = store.save(tmp_path / "store.pvs")
    loaded = InMemoryVectorStore.load(path)
    assert loaded.space == "ip" and await loaded.count() == 4
    query = [1.0, 0.5, 0.0]
    assert await loaded.search(query, n_results=4) == await store.search(query, n_results=4)
    assert await loaded.text_search("bread") == await store.text_search("bread")
    assert await loaded.search(query, where={"sweet": True}) == await store.search(
        query, where={"sweet": True}
    )


async def test_path_autosaves_every_change(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "store.pvs"
    store = InMemoryVectorStore(path=path)
    await store.insert(VECTORS, DOCS, IDS, METAS)
    await store.delete(["c"])
    reopened = InMemoryVectorStore(path=path)
    assert await reopened.count() == 3
    assert [h.id for h in await reopened.text_search("cherry banana")] == ["b"]
    await reopened.insert([[0.0, 1.0, 0.0]], ["cherry jam"], ["c"])
    assert [h.id for h in await InMemoryVectorStore(path=path).text_search("cherry")] == ["c"]


async def test_a_failed_save_leaves_the_old_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "store.pvs"
    store = await filled()
    store.save(path)
    before = path.read_bytes()
    await store.delete(["a"])

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        store.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["store.pvs"]  # no temp file left behind
    assert await InMemoryVectorStore.load(path).count() == 4


async def test_unreadable_or_mismatched_files_are_clear_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pvs"
    bad.write_text("not a store")
    with pytest.raises(VectorStoreError, match=r"InMemoryVectorStore\.save"):
        InMemoryVectorStore(path=bad)
    with pytest.raises(VectorStoreError, match="no vector store file"):
        InMemoryVectorStore.load(tmp_path / "missing.pvs")
    good = (await filled(space="l2")).save(tmp_path / "l2.pvs")
    with pytest.raises(VectorStoreError, match="space='l2'"):
        InMemoryVectorStore(space="cosine", path=good)
