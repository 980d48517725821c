"""`MemoryStore`: promptimus 0.1's in-process hybrid store, as an `InMemoryVectorStore`.

The original kept documents in dicts, scored every vector with a Python cosine and rebuilt a BM25
index after each write. This one is `InMemoryVectorStore` (numpy matrix, incremental BM25, a lock
for concurrent use) with the original's per-document methods on top, so one object serves both
the original's API and today's `VectorStoreProtocol` (and so `RetrievalModule` / `RAGModule`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, cast

from promptimus.errors import InvalidArgument, InvalidEmbedding
from promptimus.vector_stores import BaseSearchResult, InMemoryVectorStore
from promptimus.vector_stores.base import Metadata, Where

__all__ = ["MemoryStore"]


class MemoryStore(InMemoryVectorStore):
    """Documents with embeddings (vector and BM25 search) and without (BM25 search only).

    The original's API, one document per call; ids are random UUID strings chosen by the store:

    - ``await vector_insert(embedding, content) -> id`` and ``await text_insert(content) -> id``
      (a text-only document is found by ``text_search``, never by ``vector_search``);
    - ``await vector_search(embedding, n_results)`` (cosine similarity, best first) and
      ``await text_search(query, n_results)`` (BM25; only documents sharing a word with the query),
      both returning `BaseSearchResult` (``.idx``, ``.content``, ``.score``);
    - ``await delete(idx)``: one id, or a list of ids; unknown ids are ignored.

    Each also takes what the original lacked: ``metadata=`` when inserting, ``where=`` when
    searching. Being an `InMemoryVectorStore`, it also has the batch API (`insert`, `search`,
    `count`), ``space``, ``path``/``save``/``load``, and is safe to use from many tasks and threads.
    Bad input raises the store's named errors (`InvalidEmbedding`, `InvalidArgument`,
    `InvalidFilter`) before anything is stored.
    """

    hit_type = BaseSearchResult

    # --- the original's API --------------------------------------------------------------------

    async def vector_insert(
        self, embedding: Sequence[float], content: str, *, metadata: Metadata | None = None
    ) -> str:
        """Store ``content`` with its ``embedding``; returns the new document's id."""
        _check_single_vector(embedding, "vector_insert")
        doc_id = _new_id()
        await self.insert(
            [embedding],  # type: ignore[list-item]
            [content],
            [doc_id],
            None if metadata is None else [metadata],
        )
        return doc_id

    async def text_insert(self, content: str, *, metadata: Metadata | None = None) -> str:
        """Store ``content`` for text search only (no embedding); returns its id."""
        doc_id = _new_id()
        await self.insert_text_only([content], [doc_id], None if metadata is None else [metadata])
        return doc_id

    async def vector_search(
        self, embedding: Sequence[float], n_results: int = 10, *, where: Where | None = None
    ) -> list[BaseSearchResult[str]]:
        """The ``n_results`` documents nearest to ``embedding``, best first."""
        _check_single_vector(embedding, "vector_search")
        hits = await self.search(embedding, n_results, where)  # type: ignore[arg-type]
        return cast("list[BaseSearchResult[str]]", hits)

    async def delete(self, idx: str | Sequence[str]) -> None:  # type: ignore[override]
        """Remove one document (``idx`` as returned by an insert) or a list of them."""
        ids = [idx] if isinstance(idx, str) else idx
        if not isinstance(ids, list | tuple) or not all(isinstance(i, str) for i in ids):
            raise InvalidArgument(
                f"delete takes an id (the str an insert returned) or a list of ids, got {idx!r}."
            )
        await super().delete(list(ids))

    @property
    def docs(self) -> dict[str, str]:
        """A snapshot of every document's text by id (the original's ``docs``)."""
        with self._lock:
            texts = dict(zip(self._ids, self._documents, strict=True))
            texts.update((doc_id, text) for doc_id, (text, _) in self._text_only.items())
            return texts


def _new_id() -> str:
    return str(uuid.uuid4())


def _check_single_vector(embedding: Any, method: str) -> None:
    # A batch passed by mistake would otherwise reach numpy as one 2-D "vector".
    if isinstance(embedding, str | bytes) or not hasattr(embedding, "__len__"):
        raise InvalidEmbedding(
            f"{method} takes one embedding (a list of floats), got {type(embedding).__name__}."
        )
    first = embedding[0] if len(embedding) else None
    if hasattr(first, "__len__") and not isinstance(first, str | bytes):
        raise InvalidEmbedding(
            f"{method} takes one embedding (a list of floats), got a list of "
            f"{type(first).__name__}; call it once per document, or use insert() / "
            "search() for batches."
        )
