"""InMemoryVectorStore without numpy installed: vectors are refused with the extra to install,
text-only documents still work."""

from __future__ import annotations

import sys

import pytest

from promptimus.errors import OptionalDependencyMissing
from promptimus.vector_stores import InMemoryVectorStore


@pytest.fixture
def no_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` now raises ImportError


@pytest.mark.usefixtures("no_numpy")
async def test_a_vector_without_numpy_names_the_extra_to_install() -> None:
    store = InMemoryVectorStore()
    with pytest.raises(OptionalDependencyMissing, match=r"pip install 'promptimus\[numpy\]'"):
        await store.insert([[1.0, 0.0]], ["owls hunt at night"], ["owl"])
    assert len(store) == 0  # nothing half stored


@pytest.mark.usefixtures("no_numpy")
async def test_a_search_without_numpy_names_the_extra_to_install() -> None:
    with pytest.raises(OptionalDependencyMissing, match=r"promptimus\[numpy\]"):
        await InMemoryVectorStore().search([1.0, 0.0])


@pytest.mark.usefixtures("no_numpy")
async def test_text_only_documents_need_no_numpy() -> None:
    store = InMemoryVectorStore(text_search=True)
    await store.insert_text_only(["owls hunt at night", "dogs bark"], ["owl", "dog"])
    assert [hit.id for hit in await store.text_search("night owls")] == ["owl"]
