"""Bad input to a vector store gets a named error and changes nothing (issue 10).

The rules live in `promptimus.vector_stores.checks` and `base`; the Chroma plugin runs the same
checks (libs/chromadb-store/tests/test_chroma_input_checks.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from promptimus.errors import InvalidArgument, InvalidEmbedding, InvalidFilter
from promptimus.vector_stores import InMemoryVectorStore
from promptimus.vector_stores.base import MAX_FILTER_DEPTH

VECTORS = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]


async def filled() -> InMemoryVectorStore:
    store = InMemoryVectorStore()
    await store.insert(VECTORS, ["apple", "banana"], ["a", "b"], [{"k": 1}, {"k": 2}])
    return store


def nested_and(depth: int) -> dict:
    where: dict = {"k": 1}
    for _ in range(depth):
        where = {"$and": [where, {"k": {"$gte": 0}}]}
    return where


@pytest.mark.parametrize(
    "vector",
    [
        ["1", 0.0, 0.0],
        [True, False, False],
        [1.0, None, 0.0],
        [[1.0], 0.0, 0.0],
        [1.0, 0.0, math.inf],
        [1e39, 0.0, 0.0],  # finite, but infinite once stored as float32
        [10**400, 0, 0],
        np.array([True, False, True]),
        np.array(["1", "0", "0"]),
    ],
    ids=["str", "bool", "None", "list", "inf", "beyond-float32", "huge-int", "np-bool", "np-str"],
)
async def test_vector_components_must_be_finite_real_numbers(vector) -> None:  # type: ignore[no-untyped-def]
    store = await filled()
    with pytest.raises(InvalidEmbedding):
        await store.insert([vector], ["x"], ["x"])
    with pytest.raises(InvalidEmbedding):
        await store.search(vector)
    assert await store.count() == 2


async def test_the_first_insert_is_checked_too_and_numpy_vectors_are_fine() -> None:
    store = InMemoryVectorStore()
    with pytest.raises(InvalidEmbedding, match=r"embeddings\[1\]\[0\]"):
        await store.insert([[1.0, 2.0], ["1", 2.0]], ["x", "y"], ["x", "y"])
    with pytest.raises(InvalidEmbedding, match="length"):
        await store.insert([[1.0, 2.0], [1.0, 2.0, 3.0]], ["x", "y"], ["x", "y"])
    assert await store.count() == 0 and store.dimensions is None
    # An empty store still refuses a query no store could answer.
    with pytest.raises(InvalidEmbedding):
        await store.search([math.nan, 1.0])
    await store.insert(
        [np.array([1.0, 0.0], dtype=np.float32), [np.float64(0.0), np.int64(1)]],
        ["x", "y"],
        ["x", "y"],
    )
    assert [h.id for h in await store.search(np.array([0.0, 1.0]), n_results=1)] == ["y"]


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"a": {"b": 1}}, "must be a str, int, float or bool"),
        ({"a": [1, 2]}, "must be a str, int, float or bool"),
        ({"a": math.nan}, "finite"),
        ({"a": 2**63}, "64 bits"),
        ({"a": "\ud800"}, "surrogate"),
        ({"": 1}, "empty"),
        ({"chroma:document": "x"}, "reserved"),
        ({"#document": "x"}, "reserved"),
        ({"$and": 1}, "reserved"),
        ({1: "x"}, "str"),
    ],
)
async def test_metadata_every_store_can_keep(metadata: dict, message: str) -> None:
    store = await filled()
    with pytest.raises(InvalidArgument, match=message):
        await store.insert([[0.0, 0.0, 1.0]], ["x"], ["x"], [metadata])
    assert await store.count() == 2


async def test_ids_and_documents_must_be_valid_unicode(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # The autosave would fail after the insert was applied: refuse it before.
    store = InMemoryVectorStore(path=tmp_path / "store.zip")
    with pytest.raises(InvalidArgument, match="surrogate"):
        await store.insert([[1.0]], ["bad \udce9"], ["x"])
    with pytest.raises(InvalidArgument, match="surrogate"):
        await store.insert([[1.0]], ["ok"], ["\ud800"])
    assert await store.count() == 0


async def test_a_deep_filter_is_a_named_error_not_a_recursion_error() -> None:
    store = await filled()
    with pytest.raises(InvalidFilter, match=f"more than {MAX_FILTER_DEPTH} levels"):
        await store.search([1.0, 0.0, 0.0], where=nested_and(5000))
    with pytest.raises(InvalidFilter, match="levels"):
        await store.text_search("apple", where=nested_and(5000))
    cyclic: dict = {"$or": [{"k": 1}]}
    cyclic["$or"].append(cyclic)
    with pytest.raises(InvalidFilter, match="levels"):
        await store.search([1.0, 0.0, 0.0], where=cyclic)
    # The documented depth itself works.
    hits = await store.search([1.0, 0.0, 0.0], where=nested_and(MAX_FILTER_DEPTH))
    assert [h.id for h in hits] == ["a"]
    with pytest.raises(InvalidFilter):
        await store.search([1.0, 0.0, 0.0], where=nested_and(MAX_FILTER_DEPTH + 1))


@pytest.mark.parametrize(
    "where",
    [
        {"chroma:document": "apple"},
        {"#document": "apple"},
        {"k": math.nan},
        {"k": {"$gt": math.inf}},
        {"k": {"$in": [1, 2**64]}},
        {"k": "\ud800"},
        {"": 1},
    ],
)
async def test_filters_on_reserved_keys_or_unusable_values_are_refused(where: dict) -> None:
    store = await filled()
    with pytest.raises(InvalidFilter):
        await store.search([1.0, 0.0, 0.0], where=where)


async def test_n_results_must_be_a_real_int() -> None:
    store = await filled()
    with pytest.raises(InvalidArgument, match="n_results"):
        await store.search([1.0, 0.0, 0.0], n_results=True)  # type: ignore[arg-type]
