"""The Chroma plugin refuses bad input with the in-memory store's named errors, before chromadb
sees it (issue 10): no raw chromadb error, no NaN query answered with every document."""

from __future__ import annotations

import math
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings
from chromadb_store import ChromaVectorStore

from promptimus.errors import InvalidArgument, InvalidEmbedding, InvalidFilter
from promptimus.vector_stores import InMemoryVectorStore
from promptimus.vector_stores.base import MAX_FILTER_DEPTH

SETTINGS = Settings(anonymized_telemetry=False)
VECTORS = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
DOCS = ["apple pie", "banana bread"]


async def stores(tmp_path: Path) -> list:
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=SETTINGS)
    chroma = ChromaVectorStore(client, "docs")
    memory = InMemoryVectorStore()
    for store in (chroma, memory):
        await store.insert(VECTORS, DOCS, ["a", "b"], [{"k": 1}, {"k": 2}])
    return [chroma, memory]


BAD_VECTORS = [
    [math.nan, 0.0, 0.0],
    [math.inf, 0.0, 0.0],
    [1.0, 0.0],  # wrong length
    ["1", 0.0, 0.0],
    [True, False, False],
]


@pytest.mark.parametrize("vector", BAD_VECTORS, ids=["nan", "inf", "length", "str", "bool"])
async def test_bad_vectors_are_named_errors_in_both_stores(tmp_path: Path, vector: list) -> None:
    for store in await stores(tmp_path):
        with pytest.raises(InvalidEmbedding):
            await store.insert([vector], ["x"], ["x"])
        with pytest.raises(InvalidEmbedding):
            await store.search(vector)
        assert await store.count() == 2


async def test_a_nan_query_never_returns_every_document(tmp_path: Path) -> None:
    chroma, _ = await stores(tmp_path)
    with pytest.raises(InvalidEmbedding, match="NaN"):
        await chroma.search([math.nan, 1.0, 0.0], n_results=10)


async def test_a_reopened_collection_knows_its_vector_length(tmp_path: Path) -> None:
    await stores(tmp_path)
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=SETTINGS)
    client.clear_system_cache()
    reopened = ChromaVectorStore(
        chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=SETTINGS), "docs"
    )
    with pytest.raises(InvalidEmbedding, match="length 3"):
        await reopened.insert([[1.0, 2.0]], ["short"], ["s"])


@pytest.mark.parametrize(
    "metadata",
    [{"a": {"b": 1}}, {"a": [1, 2]}, {"chroma:document": "x"}, {"a": math.nan}, {"a": 2**64}],
    ids=["nested", "list", "reserved", "nan", "big-int"],
)
async def test_metadata_is_checked_the_same_way(tmp_path: Path, metadata: dict) -> None:
    for store in await stores(tmp_path):
        with pytest.raises(InvalidArgument):
            await store.insert([[0.0, 0.0, 1.0]], ["x"], ["x"], [metadata])
        assert await store.count() == 2


@pytest.mark.parametrize(
    "where",
    [{"chroma:document": "apple pie"}, {"#document": "apple pie"}, {"k": math.nan}],
    ids=["chroma:document", "#document", "nan"],
)
async def test_filters_never_reach_chromas_own_fields(tmp_path: Path, where: dict) -> None:
    for store in await stores(tmp_path):
        with pytest.raises(InvalidFilter):
            await store.search([1.0, 0.0, 0.0], where=where)


async def test_the_deepest_allowed_filter_works_in_chroma_and_deeper_is_named(
    tmp_path: Path,
) -> None:
    where: dict = {"k": 1}
    for _ in range(MAX_FILTER_DEPTH):
        # Two keys per level: the Chroma form adds an explicit $and at every level.
        where = {"$and": [where, {"k": {"$gte": 0}, "n": {"$ne": 5}}]}
    chroma, memory = await stores(tmp_path)
    assert [h.id for h in await chroma.search([1.0, 0.0, 0.0], where=where)] == ["a"]
    assert [h.id for h in await memory.search([1.0, 0.0, 0.0], where=where)] == ["a"]
    deep: dict = {"k": 1}
    for _ in range(5000):
        deep = {"$and": [deep, {"k": 1}]}
    with pytest.raises(InvalidFilter, match="levels"):
        await chroma.search([1.0, 0.0, 0.0], where=deep)
