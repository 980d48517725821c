"""InMemoryVectorStore documents without embeddings: found by text search only, upserted across
both kinds, deleted, filtered, persisted; bad input refused before anything is stored."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from promptimus.errors import (
    InvalidArgument,
    InvalidFilter,
    TextSearchUnsupported,
    VectorStoreError,
)
from promptimus.vector_stores import InMemoryVectorStore


async def mixed_store(**kwargs: object) -> InMemoryVectorStore:
    store = InMemoryVectorStore(**kwargs)  # type: ignore[arg-type]
    await store.insert(
        [[1.0, 0.0], [0.0, 1.0]],
        ["owls hunt at night", "cats sleep all day"],
        ["owl", "cat"],
        [{"kind": "bird"}, {"kind": "mammal"}],
    )
    await store.insert_text_only(
        ["bats hunt at night", "dogs bark"], ["bat", "dog"], [{"kind": "mammal"}, None]
    )
    return store


async def test_text_only_documents_are_found_by_text_search_and_never_by_vector_search() -> None:
    store = await mixed_store()
    assert await store.count() == len(store) == 4
    night = await store.text_search("hunt at night")
    assert {hit.id for hit in night} == {"owl", "bat"}
    assert all(hit.score > 0 for hit in night)
    vector_ids = {hit.id for hit in await store.search([1.0, 1.0], n_results=10)}
    assert vector_ids == {"owl", "cat"}
    (bat,) = [hit for hit in night if hit.id == "bat"]
    assert (bat.document, bat.metadata) == ("bats hunt at night", {"kind": "mammal"})
    assert [None if h is None else h.id for h in store.get(["dog", "owl", "nope"])] == [
        "dog",
        "owl",
        None,
    ]


async def test_where_filters_apply_to_text_only_documents() -> None:
    store = await mixed_store()
    hits = await store.text_search("night", where={"kind": "mammal"})
    assert [hit.id for hit in hits] == ["bat"]
    assert await store.text_search("dogs", where={"kind": {"$ne": "mammal"}}) != []
    with pytest.raises(InvalidFilter):
        await store.text_search("night", where={"kind": {"$regex": "m"}})


async def test_an_id_moves_between_kinds_without_duplicates() -> None:
    store = await mixed_store()
    # a text-only id gets an embedding: now vector-searchable, still once in text search
    await store.insert([[0.6, 0.8]], ["bats hunt at dusk"], ["bat"])
    assert len(store) == 4
    assert "bat" in {hit.id for hit in await store.search([0.6, 0.8], n_results=10)}
    assert [hit.id for hit in await store.text_search("bats")] == ["bat"]
    assert {hit.id for hit in await store.text_search("night")} == {"owl"}
    # a vector id replaced by a text-only document loses its embedding
    await store.insert_text_only(["owls are birds"], ["owl"])
    assert len(store) == 4
    assert "owl" not in {hit.id for hit in await store.search([1.0, 0.0], n_results=10)}
    assert [hit.id for hit in await store.text_search("owls")] == ["owl"]
    assert await store.text_search("hunt") != [] and await store.text_search("night") == []


async def test_delete_and_clear_remove_text_only_documents() -> None:
    store = await mixed_store()
    await store.delete(["bat", "owl", "unknown"])
    assert len(store) == 2
    assert await store.text_search("night") == []
    store.clear()
    assert len(store) == 0
    assert await store.text_search("dogs") == []


async def test_a_store_without_text_search_refuses_text_only_documents() -> None:
    store = InMemoryVectorStore(text_search=False)
    with pytest.raises(TextSearchUnsupported, match="text_search=True"):
        await store.insert_text_only(["x"], ["a"])
    assert len(store) == 0


@pytest.mark.parametrize(
    ("documents", "ids", "metadatas", "match"),
    [
        (["a", "b"], ["1"], None, "one document and metadata per id"),
        (["a"], ["1"], [{}, {}], "metadata per id"),
        ([b"bytes"], ["1"], None, "documents must be str"),
        (["a"], [""], None, "non-empty strings"),
        (["a"], [3], None, "non-empty strings"),
        (["a"], ["1"], [{"k": [1]}], "not allowed"),
    ],
)
async def test_bad_text_only_input_is_refused_and_nothing_is_stored(
    documents: list, ids: list, metadatas: list | None, match: str
) -> None:
    store = await mixed_store()
    with pytest.raises(InvalidArgument, match=match):
        await store.insert_text_only(documents, ids, metadatas)
    assert len(store) == 4
    assert [hit.id for hit in await store.text_search("dogs")] == ["dog"]


async def test_a_text_search_query_must_be_text() -> None:
    store = await mixed_store()
    with pytest.raises(InvalidArgument, match="str query"):
        await store.text_search(["night"])  # type: ignore[arg-type]


async def test_text_only_documents_survive_save_and_load(tmp_path: Path) -> None:
    path = tmp_path / "store.zip"
    store = await mixed_store(path=path)  # autosave after every change
    loaded = InMemoryVectorStore.load(path)
    assert len(loaded) == 4
    assert {hit.id for hit in await loaded.text_search("night")} == {"owl", "bat"}
    assert {hit.id for hit in await loaded.search([1.0, 1.0])} == {"owl", "cat"}
    assert loaded.get(["bat"])[0].metadata == {"kind": "mammal"}  # type: ignore[union-attr]
    await store.delete(["bat"])
    assert {hit.id for hit in await InMemoryVectorStore.load(path).text_search("night")} == {"owl"}
    # a store that cannot text-search must not silently hold documents it can never return
    with pytest.raises(VectorStoreError, match="text_search=True"):
        InMemoryVectorStore(text_search=False, path=path)


async def test_a_store_file_without_text_only_documents_has_no_such_section(
    tmp_path: Path,
) -> None:
    # files of stores that never used the feature stay as they were
    path = tmp_path / "plain.zip"
    store = InMemoryVectorStore(path=path)
    await store.insert([[1.0, 0.0]], ["x"], ["a"])
    with zipfile.ZipFile(path) as archive:
        assert b"text_only" not in archive.read("store.json")
