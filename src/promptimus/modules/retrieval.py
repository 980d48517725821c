"""`RetrievalModule`: insert documents into a vector store and retrieve them — by embedding, by
text (BM25) where the store supports it, fused by document id, optionally reranked."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from .._compat_seam import compat_calls, compat_function
from ..argument_checks import non_negative_int, positive_int
from ..core import Module
from ..errors import InvalidArgument, ProviderResponseError, RerankerNotSet
from ..observe.provider_calls import provider_call
from ..rerankers.rrf import RRFReranker

if TYPE_CHECKING:
    from ..dto import Metadata, SearchHit
    from ..protocols import EmbedderProtocol, RerankerProtocol, VectorStoreProtocol, Where

__all__ = ["RetrievalModule", "document_id"]

_rerank_unfused: Callable[..., Awaitable[list[SearchHit]]] = compat_function(
    "retrieval:rerank_unfused"
)


def document_id(document: str) -> str:
    """The id a document gets when none is given: a hash of its text, so inserting the same text
    again replaces it instead of duplicating it."""
    return (
        "doc-"
        + hashlib.blake2b(document.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    )


class RetrievalModule(Module):
    """Retrieval over a vector store, hybrid when text search is available.

    - **Stores**: ``vector_store`` (or one set with `with_vector_store` on any ancestor) holds the
      embeddings. Text search uses ``text_store`` if given, otherwise the vector store itself when
      its ``supports_text_search`` is true; with neither, retrieval is semantic only.
    - **Inserting**: `insert` / `insert_batch` embed all documents with one ``aembed_batch`` call
      and write the same ids to both stores, so one document is one result. Without ``ids``, the
      id is a hash of the text (`document_id`): re-inserting a text never duplicates it.
    - **Retrieving** (`forward`): up to ``n_semantic`` hits by embedding and ``n_text`` by text,
      merged by id with reciprocal rank fusion (an `RRFReranker` with ``fusion_k``), then reranked
      by the reranker if one is set (constructor or `with_reranker` on any ancestor), and cut to
      ``n_after_rerank``. A reranker with a ``fuse`` method (another `RRFReranker`) replaces the
      fusion step instead. Scores are the last stage's: store scores for a single source without
      reranker, RRF scores after fusion, the reranker's scores after reranking.
    - ``n_semantic``, ``n_text`` and ``n_after_rerank`` are plain ints (0 switches a source off),
      not Parameters: the module adds no checkpoint keys, so a tree holding one saves and loads
      the same files as one written with promptimus 0.1.
    """

    @compat_calls("retrieval:retrieval_arguments")
    def __init__(
        self,
        vector_store: VectorStoreProtocol | None = None,
        text_store: VectorStoreProtocol | None = None,
        n_semantic: int = 10,
        n_text: int = 10,
        n_after_rerank: int = 10,
        *,
        embedder: EmbedderProtocol | None = None,
        reranker: RerankerProtocol | None = None,
        fusion_k: int = 60,
    ) -> None:
        super().__init__()
        self.n_semantic = _check_count("n_semantic", n_semantic)
        self.n_text = _check_count("n_text", n_text)
        self.n_after_rerank = _check_count("n_after_rerank", n_after_rerank)
        self._fusion = RRFReranker(fusion_k)
        if vector_store is not None:
            self.with_vector_store(vector_store)
        if embedder is not None:
            self.with_embedder(embedder)
        if reranker is not None:
            self.with_reranker(reranker)
            if isinstance(reranker, Module):
                # registered so its parameters are checkpointed and it finds providers via this tree
                self.reranker_module = reranker
        self._text_store = text_store

    # ------------------------------------------------------------------ stores

    @property
    def text_store(self) -> VectorStoreProtocol | None:
        """The store used for text search, or None when retrieval is semantic only."""
        if self._text_store is not None:
            return self._text_store
        store = self.vector_store
        return store if getattr(store, "supports_text_search", False) else None

    @text_store.setter
    def text_store(self, store: VectorStoreProtocol | None) -> None:
        self._text_store = store

    def _stores(self) -> list[VectorStoreProtocol]:
        store = self.vector_store
        extra = self._text_store
        return [store] if extra is None or extra is store else [store, extra]

    # ------------------------------------------------------------------ writing

    async def insert(
        self,
        documents: str | Sequence[str],
        ids: str | Sequence[str] | None = None,
        metadatas: Metadata | Sequence[Metadata] | None = None,
    ) -> list[str]:
        """Insert one document (a ``str``) or several; returns their ids in input order."""
        if isinstance(documents, str):
            if ids is not None and not isinstance(ids, str):
                raise InvalidArgument("insert() of one document takes one id (a str) or None.")
            if metadatas is not None and not isinstance(metadatas, dict):
                raise InvalidArgument("insert() of one document takes one metadata dict or None.")
            return await self.insert_batch(
                [documents],
                None if ids is None else [ids],
                None if metadatas is None else [metadatas],
            )
        if isinstance(ids, str) or isinstance(metadatas, dict):
            raise InvalidArgument(
                "insert() of several documents takes a list of ids and a list of metadata dicts."
            )
        return await self.insert_batch(documents, ids, metadatas)

    async def insert_batch(
        self,
        documents: Sequence[str],
        ids: Sequence[str] | None = None,
        metadatas: Sequence[Metadata] | None = None,
        *,
        chunk_size: int | None = None,
    ) -> list[str]:
        """Embed and store ``documents``; returns one id per document, in input order.

        All documents are embedded with one ``aembed_batch`` call (the embedder splits it into
        requests of its own batch size), or one call per ``chunk_size`` documents to bound memory.
        A document repeated with the same id is stored once, with the last metadata given.
        """
        docs = list(documents)
        for i, doc in enumerate(docs):
            if not isinstance(doc, str):
                raise InvalidArgument(
                    f"documents[{i}] is a {type(doc).__name__}; documents are str."
                )
        id_list = _checked_ids(docs, ids)
        metas = None if metadatas is None else list(metadatas)
        if metas is not None and len(metas) != len(docs):
            raise InvalidArgument(f"Got {len(metas)} metadatas for {len(docs)} documents.")
        if chunk_size is not None:
            chunk_size = positive_int(chunk_size, "chunk_size (or None)")
        unique = _last_of_each_id(docs, id_list)
        step = chunk_size or max(len(unique), 1)
        stores = self._stores()
        embedder = self.embedder
        for start in range(0, len(unique), step):
            chunk = unique[start : start + step]
            texts = [docs[i] for i in chunk]
            async with provider_call("embedding", self, embedder, texts) as call:
                if call.output is None:  # else an observer answered it (a replay cassette)
                    call.output = await embedder.aembed_batch(texts)
                embeddings = call.output
            if len(embeddings) != len(texts):
                raise ProviderResponseError(
                    f"The embedder {getattr(embedder, 'model_name', embedder)!r} returned "
                    f"{len(embeddings)} vectors for {len(texts)} documents."
                )
            chunk_ids = [id_list[i] for i in chunk]
            chunk_metas = None if metas is None else [metas[i] for i in chunk]
            writes = [store.insert(embeddings, texts, chunk_ids, chunk_metas) for store in stores]
            if len(writes) == 1:
                await writes[0]
            else:
                await asyncio.gather(*writes)
        return id_list

    async def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id from every store this module writes to."""
        id_list = list(ids)
        if not id_list:
            return
        await asyncio.gather(*(store.delete(id_list) for store in self._stores()))

    # ------------------------------------------------------------------ reading

    def _reranker_or_none(self) -> Any:
        try:
            return self.reranker
        except RerankerNotSet:
            return None

    async def forward(self, query: str, where: Where | None = None) -> list[SearchHit]:
        n_semantic = _check_count("n_semantic", self.n_semantic)
        n_text = _check_count("n_text", self.n_text)
        n_out = _check_count("n_after_rerank", self.n_after_rerank)
        text_store = self.text_store if n_text else None

        searches = []
        if n_semantic:
            searches.append(self._semantic(query, n_semantic, where))
        if text_store is not None:
            searches.append(text_store.text_search(query, n_text, where))
        if not searches or not n_out:
            for search in searches:
                search.close()
            return []
        if len(searches) == 1:
            rankings: list[list[SearchHit]] = [await searches[0]]
        else:
            rankings = list(await asyncio.gather(*searches))

        reranker = self._reranker_or_none()
        if reranker is not None and not hasattr(reranker, "rerank"):  # an older protocol
            return await _rerank_unfused(reranker, query, rankings, n_out)
        if reranker is not None and hasattr(reranker, "fuse"):
            return reranker.fuse(rankings, top_n=n_out)  # type: ignore[no-any-return]
        candidates = rankings[0] if len(rankings) == 1 else self._fusion.fuse(rankings)
        if reranker is None or not candidates:
            return candidates[:n_out]
        params = {"top_n": n_out}
        async with provider_call("rerank", self, reranker, (query, candidates), params) as call:
            call.output = await reranker.rerank(query, candidates, top_n=n_out)
        return call.output  # type: ignore[no-any-return]

    async def _semantic(self, query: str, n: int, where: Where | None) -> list[SearchHit]:
        embedder = self.embedder
        async with provider_call("embedding", self, embedder, [query]) as call:
            if call.output is None:  # else an observer answered it (a replay cassette)
                call.output = [await embedder.aembed(query)]
            (embedding,) = call.output
        return await self.vector_store.search(embedding, n, where)


def _checked_ids(docs: list[str], ids: Sequence[str] | None) -> list[str]:
    """One non-empty str id per document; a hash of the text (`document_id`) when none given."""
    if ids is None:
        return [document_id(doc) for doc in docs]
    id_list = list(ids)
    if len(id_list) != len(docs):
        raise InvalidArgument(f"Got {len(id_list)} ids for {len(docs)} documents.")
    for i, doc_id in enumerate(id_list):
        if not isinstance(doc_id, str) or not doc_id:
            raise InvalidArgument(f"ids[{i}] must be a non-empty str, got {doc_id!r}.")
    return id_list


def _last_of_each_id(docs: list[str], id_list: list[str]) -> list[int]:
    """The positions to store, in input order: one per id, the last occurrence winning as
    separate upserts would; an id given for two different texts is refused."""
    latest: dict[str, int] = {}
    for position, doc_id in enumerate(id_list):
        first = latest.get(doc_id)
        if first is not None and docs[first] != docs[position]:
            raise InvalidArgument(
                f"The id {doc_id!r} is given for two different documents (positions {first} "
                f"and {position}); ids must identify one document."
            )
        latest[doc_id] = position
    return sorted(latest.values())


def _check_count(name: str, value: Any) -> int:
    return non_negative_int(value, f"{name} (0 switches it off)")
