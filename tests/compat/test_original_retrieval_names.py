"""The retrieval-side names of promptimus 0.1 import and work: ``promptimus.embedders.ops``,
``promptimus.embedders.base`` / ``Embedding``, and the deprecated ``promptimus.vectore_store``."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
import warnings
from collections.abc import Hashable

import pytest

import promptimus.embedders
from promptimus.errors import InvalidArgument, PromptimusError
from promptimus.ops import cosine as our_cosine
from promptimus.vector_stores import (
    BaseSearchResult,
    InMemoryVectorStore,
    PerDocumentTextStoreProtocol,
    PerDocumentVectorStoreProtocol,
    SearchHit,
)
from promptimus.vector_stores import VectorStoreProtocol as BatchVectorStoreProtocol

# --- promptimus.embedders -------------------------------------------------------------------------


def test_embedders_ops_cosine_is_where_the_original_had_it() -> None:
    from promptimus.embedders.ops import cosine

    assert cosine is our_cosine
    assert cosine([1.0, 0.0], [1.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 2.0]) == pytest.approx(0.0)
    assert cosine([1.0, 1.0], [-1.0, -1.0]) == pytest.approx(-1.0)


def test_embedders_base_and_embedding_as_in_the_original() -> None:
    from promptimus.embedders import EmbedderProtocol, Embedding
    from promptimus.embedders.base import EmbedderProtocol as BaseProtocol
    from promptimus.embedders.base import Embedding as BaseEmbedding

    assert Embedding is BaseEmbedding
    assert EmbedderProtocol is BaseProtocol
    vector: Embedding = [0.5, 0.25]
    assert vector == [0.5, 0.25]
    # submodules are reachable as attributes of the package, as after `import promptimus.embedders`
    assert promptimus.embedders.ops.cosine is our_cosine
    assert promptimus.embedders.base.Embedding is Embedding
    assert {"base", "ops"} <= set(dir(promptimus.embedders))


# --- promptimus.vectore_store (deprecated spelling) --------------------------------------------


def import_fresh(statement: str) -> tuple[dict[str, object], list[warnings.WarningMessage]]:
    """Run an import statement with the shim not yet imported; return its names and warnings."""
    for name in [m for m in sys.modules if m.startswith("promptimus.vectore_store")]:
        del sys.modules[name]
    namespace: dict[str, object] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile(statement, "<user code>", "exec"), namespace)
    return namespace, [w for w in caught if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize(
    "statement",
    [
        "import promptimus.vectore_store",
        "import promptimus.vectore_store.base",
        "from promptimus.vectore_store import BaseSearchResult",
        "from promptimus.vectore_store.base import "
        "BaseSearchResult, TextStoreProtocol, VectorStoreProtocol",
    ],
)
def test_the_misspelled_package_warns_exactly_once_naming_the_new_one(statement: str) -> None:
    _, deprecations = import_fresh(statement)
    assert len(deprecations) == 1
    (warning,) = deprecations
    assert "promptimus.vector_stores" in str(warning.message)
    assert "promptimus.vectore_store" in str(warning.message)
    # attributed to the line that imports it, not to promptimus or importlib
    assert warning.filename == "<user code>"


def test_the_shim_reexports_the_same_objects() -> None:
    names, _ = import_fresh(
        "from promptimus.vectore_store import BaseSearchResult as a, VectorStoreProtocol as b, "
        "TextStoreProtocol as c\n"
        "from promptimus.vectore_store.base import BaseSearchResult as d, "
        "VectorStoreProtocol as e, TextStoreProtocol as f\n"
    )
    assert names["a"] is names["d"] is BaseSearchResult
    assert names["b"] is names["e"] is PerDocumentVectorStoreProtocol
    assert names["c"] is names["f"] is PerDocumentTextStoreProtocol


def test_the_warning_shows_by_default_in_a_users_script() -> None:
    # Python shows DeprecationWarning by default only when attributed to __main__: the stack level
    # must point at the user's import, or nobody running a script would ever see it.
    result = subprocess.run(
        [sys.executable, "-c", "import promptimus.vectore_store.base"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("DeprecationWarning") == 1
    assert "promptimus.vector_stores" in result.stderr


def test_the_shim_and_the_embedders_names_stay_light() -> None:
    probe = (
        "import promptimus, promptimus.embedders.ops, promptimus.embedders.base\n"
        "import warnings; warnings.simplefilter('ignore')\n"
        "import promptimus.vectore_store.base\n"
        "from promptimus.vector_stores import BaseSearchResult\n"
        "BaseSearchResult(idx='a', content='b')\n"
        "import json, sys\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('numpy', 'openai', 'httpx', 'chromadb'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


# --- BaseSearchResult ----------------------------------------------------------------------------


def test_base_search_result_is_built_and_read_with_the_original_names() -> None:
    hit = BaseSearchResult(idx="doc-1", content="Cats purr.", score=0.75)
    assert (hit.idx, hit.content, hit.score) == ("doc-1", "Cats purr.", 0.75)
    assert (hit.id, hit.document, hit.metadata) == ("doc-1", "Cats purr.", {})
    assert isinstance(hit, SearchHit)  # every store, reranker and module takes it
    assert BaseSearchResult(idx="x", content="y").score == 0.0  # the original's default
    assert BaseSearchResult("x", "y", 2).score == 2.0 and isinstance(
        BaseSearchResult("x", "y", 2).score, float
    )
    # the original was generic in the id type; subscripting still works
    typed = BaseSearchResult[str](idx="z", content="w")
    assert type(typed) is BaseSearchResult and typed.idx == "z"
    with pytest.raises(dataclasses.FrozenInstanceError):
        hit.score = 1.0  # type: ignore[misc]


def test_every_search_hit_reads_with_the_original_names() -> None:
    hit = SearchHit("a", "text", 0.5, {"k": 1})
    assert (hit.idx, hit.content) == ("a", "text")


def test_copies_keep_the_type_and_take_either_name() -> None:
    hit = BaseSearchResult(idx="a", content="text", score=0.1, metadata={"lang": "en"})
    rescored = dataclasses.replace(hit, score=0.9)  # what our rerankers do
    assert type(rescored) is BaseSearchResult and rescored.score == 0.9
    assert rescored.metadata == {"lang": "en"} and rescored.metadata is not hit.metadata
    copied = hit.model_copy(update={"score": 0.5, "content": "new"})  # what the original's did
    assert (copied.idx, copied.content, copied.score) == ("a", "new", 0.5)
    assert type(copied) is BaseSearchResult and hit.content == "text"
    assert hit.model_dump() == {"idx": "a", "content": "text", "score": 0.1}
    assert hit == BaseSearchResult("a", "text", 0.1, {"lang": "en"})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"content": "x"}, "needs idx"),
        ({"idx": "a"}, "needs content"),
        ({"idx": "a", "id": "b", "content": "x"}, "both idx= and id="),
        ({"idx": "a", "content": 3}, "content must be str"),
        ({"idx": ["a"], "content": "x"}, "hashable"),
        ({"idx": "a", "content": "x", "score": "high"}, "score must be a number"),
        ({"idx": "a", "content": "x", "score": math.nan}, "score must be a number"),
        ({"idx": "a", "content": "x", "score": True}, "score must be a number"),
        ({"idx": "a", "content": "x", "metadata": ["k"]}, "metadata must be a dict"),
    ],
)
def test_bad_results_are_refused_with_a_named_error(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidArgument, match=match) as caught:
        BaseSearchResult(**kwargs)
    assert isinstance(caught.value, PromptimusError)


# --- the 0.1 store protocols -------------------------------------------------------------------


class OriginalStyleStore:
    """A store written against promptimus 0.1's protocols, as a user would have."""

    def __init__(self) -> None:
        self.rows: dict[int, str] = {}

    async def vector_insert(self, embedding: list[float], content: str) -> Hashable:
        self.rows[len(self.rows)] = content
        return len(self.rows) - 1

    async def vector_search(self, embedding: list[float], n_results: int) -> list[SearchHit]:
        return [BaseSearchResult(idx=i, content=c) for i, c in self.rows.items()][:n_results]

    async def text_insert(self, content: str) -> Hashable:
        return await self.vector_insert([], content)

    async def text_search(self, query: str, n_results: int) -> list[SearchHit]:
        return [BaseSearchResult(idx=i, content=c) for i, c in self.rows.items() if query in c]

    async def delete(self, idx: Hashable) -> None:
        self.rows.pop(idx)  # type: ignore[call-overload]


async def test_the_original_protocols_describe_the_original_methods() -> None:
    store = OriginalStyleStore()
    assert isinstance(store, PerDocumentVectorStoreProtocol)
    assert isinstance(store, PerDocumentTextStoreProtocol)
    await store.vector_insert([1.0], "hello world")
    (hit,) = await store.vector_search([1.0], 3)
    assert (hit.idx, hit.content) == (0, "hello world")  # any hashable id, as in the original
    # today's batch store is a different interface, and the protocols tell them apart
    assert not isinstance(InMemoryVectorStore(), PerDocumentVectorStoreProtocol)
    assert not isinstance(store, BatchVectorStoreProtocol)
