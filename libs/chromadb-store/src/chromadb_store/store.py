"""``ChromaVectorStore``: a promptimus vector store over one Chroma collection.

Works with every Chroma client: ``EphemeralClient`` and ``PersistentClient`` (embedded),
``HttpClient`` (a Chroma server), whose blocking calls run in a worker thread, and
``AsyncHttpClient``, whose calls are awaited directly.

Chroma's distances (``cosine``: ``1 - cos``; ``ip``: ``1 - a·b``; ``l2``: squared Euclidean) become
scores where higher is better, the same numbers `InMemoryVectorStore` gives:
``cosine`` -> ``1 - d`` (the cosine similarity), ``ip`` -> ``1 - d`` (the inner product),
``l2`` -> ``1 / (1 + d)`` (in ``(0, 1]``, 1 for an exact match).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, Literal

from promptimus.errors import (
    InvalidArgument,
    InvalidEmbedding,
    TextSearchUnsupported,
    VectorIndexCorrupted,
    VectorStoreError,
    VectorStoreRecoveryError,
)
from promptimus.vector_stores.base import Metadata, SearchHit, Where, check_insert, check_query

__all__ = ["ChromaVectorStore", "Space", "to_chroma_where"]

Space = Literal["cosine", "l2", "ip"]
_SPACES = ("cosine", "l2", "ip")
_LEGACY_SPACE_KEY = "hnsw:space"
_DEFAULT_SPACE: Space = "cosine"
_INCLUDE = ["documents", "metadatas", "distances"]


class ChromaVectorStore:
    """Documents, embeddings and metadata in a Chroma collection (created if missing).

    - ``client``: any Chroma client; for the async one pass ``await chromadb.AsyncHttpClient()``
      (the un-awaited coroutine works too, it is awaited on first use).
    - ``space``: ``"cosine"``, ``"l2"`` or ``"ip"`` for a new collection (default cosine). An
      existing collection keeps its space; asking for a different one raises `VectorStoreError`.
    - ``metadata``: the collection's own metadata (a legacy ``"hnsw:space"`` key is honoured).

    promptimus always sends embeddings and the collection is opened with
    ``embedding_function=None``, so Chroma never downloads its default embedding model. Chroma has
    no BM25, so ``text_search`` raises `TextSearchUnsupported`.
    """

    supports_text_search = False

    def __init__(
        self,
        client: Any,
        collection_name: str,
        metadata: dict[str, Any] | None = None,
        space: Space | None = None,
    ) -> None:
        if space is not None and space not in _SPACES:
            raise InvalidArgument(f"space must be one of {_SPACES} or None, got {space!r}.")
        legacy = (metadata or {}).get(_LEGACY_SPACE_KEY)
        if legacy is not None and space is not None and legacy != space:
            raise InvalidArgument(
                f"metadata says {_LEGACY_SPACE_KEY}={legacy!r} but space={space!r}; "
                "pass only one of them."
            )
        self.collection_name = collection_name
        self._client = client
        self._metadata = dict(metadata) if metadata else None
        self._requested_space = space
        self._collection: Any = None
        self._max_batch: int | None = None
        self._dim: int | None = None
        self.space: Space | None = None
        """The collection's distance space, known once the collection is open."""
        self._score: Callable[[float], float] = _cosine_score
        self._open_lock: asyncio.Lock | None = None
        self._is_async = inspect.isawaitable(client) or _is_async_client(client)
        if not self._is_async:
            self._open_sync()

    def __repr__(self) -> str:
        return (
            f"ChromaVectorStore(collection_name={self.collection_name!r}, space={self.space!r}, "
            f"client={type(self._client).__name__})"
        )

    @property
    def collection(self) -> Any:
        """The underlying Chroma collection (``None`` until an async store's first call)."""
        return self._collection

    # --- opening -------------------------------------------------------------------------------

    def _create_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"name": self.collection_name, "embedding_function": None}
        if self._metadata:
            kwargs["metadata"] = self._metadata
        if self._metadata is None or _LEGACY_SPACE_KEY not in self._metadata:
            kwargs["configuration"] = {"hnsw": {"space": self._requested_space or _DEFAULT_SPACE}}
        return kwargs

    def _open_sync(self) -> None:
        collection = self._client.get_or_create_collection(**self._create_kwargs())
        self._max_batch = int(self._client.get_max_batch_size())
        self._adopt(collection)

    async def _open_async(self) -> Any:
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:  # concurrent first calls open the collection once
            if self._collection is not None:
                return self._collection
            if inspect.isawaitable(self._client):
                self._client = await self._client
            collection = await self._client.get_or_create_collection(**self._create_kwargs())
            self._max_batch = int(await self._client.get_max_batch_size())
            self._adopt(collection)
            return collection

    def _adopt(self, collection: Any) -> None:
        space = _space_of(collection)
        wanted = self._requested_space or (self._metadata or {}).get(_LEGACY_SPACE_KEY)
        if wanted is not None and space != wanted:
            raise VectorStoreError(
                f"the Chroma collection {self.collection_name!r} already exists with space "
                f"{space!r}, not {wanted!r}; a collection's space cannot change. Pass "
                f"space={space!r}, or delete the collection to rebuild it."
            )
        if space not in _SPACES:
            raise VectorStoreError(
                f"the Chroma collection {self.collection_name!r} uses space {space!r}; "
                f"promptimus supports {_SPACES}."
            )
        self.space = space
        self._score = _SCORERS[space]
        self._collection = collection

    async def _call(self, method: str, /, **kwargs: Any) -> Any:
        collection = self._collection
        try:
            if self._is_async:
                if collection is None:
                    collection = await self._open_async()
                return await getattr(collection, method)(**kwargs)
            return await asyncio.to_thread(getattr(collection, method), **kwargs)
        except Exception as exc:
            named = self._named_error(exc)
            if named is None:
                raise
            raise named from exc

    def _named_error(self, exc: Exception) -> Exception | None:
        message = str(exc)
        kind = type(exc).__name__
        if kind == "InternalError" and "hnsw" in message.lower():
            return VectorIndexCorrupted(
                f"the Chroma collection {self.collection_name!r} has a vector index chromadb "
                "cannot read (typically left by a process killed while writing it); its rows "
                "are still on disk. Call `await store.rebuild()` (with no other process using "
                f"the database) to rebuild the index from them. chromadb said: {message}"
            )
        if kind == "InvalidArgumentError" and "dimension" in message:
            return InvalidEmbedding(
                f"the Chroma collection {self.collection_name!r} holds vectors of another "
                f"length ({message}); use one embedder (and one `dimensions`) for a store."
            )
        return None

    async def _dimensions(self) -> int | None:
        """The length of the collection's vectors (``None`` while it is empty)."""
        if self._dim is None:
            found = await self._call("get", limit=1, include=["embeddings"])
            embeddings = found.get("embeddings")
            if embeddings is not None and len(embeddings):
                self._dim = len(embeddings[0])
        return self._dim

    async def _batch_size(self) -> int:
        if self._max_batch is None and self._is_async:
            await self._open_async()
        return self._max_batch or 1000

    # --- protocol ------------------------------------------------------------------------------

    async def insert(
        self,
        embeddings: list[list[float]],
        documents: list[str],
        ids: list[str],
        metadatas: list[Metadata] | None = None,
    ) -> list[str]:
        """Add or replace documents (upsert); returns ``ids``. A repeated id: the last one wins."""
        dimensions = check_insert(
            embeddings, documents, ids, metadatas, dimensions=await self._dimensions()
        )
        n = len(ids)
        if n == 0:
            return []
        rows: list[int] | range = range(n)
        if len(set(ids)) != n:  # Chroma rejects duplicates in one call; keep the last of each
            rows = list({doc_id: i for i, doc_id in enumerate(ids)}.values())
        step = await self._batch_size()
        for start in range(0, len(rows), step):
            chunk = rows[start : start + step]
            chunk_ids = [ids[i] for i in chunk]
            chunk_metadatas = await self._replacing_metadatas(
                chunk_ids, [_to_chroma_metadata(metadatas[i]) if metadatas else None for i in chunk]
            )
            await self._call(
                "upsert",
                ids=chunk_ids,
                embeddings=[embeddings[i] for i in chunk],
                documents=[documents[i] for i in chunk],
                metadatas=chunk_metadatas if any(chunk_metadatas) else None,
            )
            self._dim = dimensions
        return list(ids)

    async def _replacing_metadatas(
        self, ids: list[str], metadatas: list[Metadata | None]
    ) -> list[Metadata | None]:
        """Metadata that *replaces* what the ids hold: Chroma's upsert merges metadata, so keys
        the new metadata lacks are set to None (which deletes them)."""
        existing = await self._call("get", ids=ids, include=["metadatas"])
        stale = {
            doc_id: old
            for doc_id, old in zip(existing["ids"], existing["metadatas"] or (), strict=False)
            if old
        }
        if not stale:
            return metadatas
        position = {doc_id: i for i, doc_id in enumerate(ids)}
        for doc_id, old in stale.items():
            i = position[doc_id]
            new = metadatas[i] or {}
            removed = {key: None for key in old if key not in new}
            if removed:
                metadatas[i] = {**removed, **new}
        return metadatas

    async def search(
        self, embedding: list[float], n_results: int = 10, where: Where | None = None
    ) -> list[SearchHit]:
        """The ``n_results`` nearest documents, best first, among those matching ``where``."""
        check_query(embedding, n_results, where, await self._dimensions())
        if n_results == 0:
            return []
        kwargs: dict[str, Any] = {
            "query_embeddings": [embedding],
            "n_results": n_results,
            "include": _INCLUDE,
        }
        if where is not None:
            kwargs["where"] = to_chroma_where(where)
        result = await self._call("query", **kwargs)
        ids = result["ids"][0]
        documents = result["documents"][0]
        metadatas = result["metadatas"][0]
        distances = result["distances"][0]
        score = self._score
        return [
            SearchHit(doc_id, document or "", score(distance), dict(metadata or {}))
            for doc_id, document, metadata, distance in zip(
                ids, documents, metadatas, distances, strict=True
            )
        ]

    async def text_search(
        self, query: str, n_results: int = 10, where: Where | None = None
    ) -> list[SearchHit]:
        raise TextSearchUnsupported(
            "Chroma has no BM25 text search; give RetrievalModule a text_store such as "
            "InMemoryVectorStore(text_search=True) for hybrid retrieval."
        )

    async def delete(self, ids: list[str]) -> None:
        """Remove these ids; unknown ids are ignored."""
        if isinstance(ids, str):
            raise InvalidArgument("delete takes a list of ids, got a single str; wrap it in [].")
        unique = list(dict.fromkeys(ids))
        if not unique:  # never send ids=[]: with no ids and no filter, nothing is the intent
            return
        step = await self._batch_size()
        for start in range(0, len(unique), step):
            await self._call("delete", ids=unique[start : start + step])

    async def count(self) -> int:
        return int(await self._call("count"))

    # --- recovery ------------------------------------------------------------------------------

    async def rebuild(self) -> int:
        """Rebuild the collection from the rows chromadb committed to disk; returns their count.

        For a ``PersistentClient`` whose collection raises `VectorIndexCorrupted` (a process was
        killed while chromadb wrote its vector index; chromadb itself offers no repair). It reads
        ``chroma.sqlite3`` and the index files directly (see `chromadb_store.recovery`): every
        committed id with its document, metadata and vector. If any vector cannot be recovered
        it raises `VectorStoreRecoveryError` and changes nothing. Otherwise it writes the rows
        into a new collection, deletes the broken one and gives the new one its name (same
        space and metadata). Run it while no other process uses the database. Calling it on a
        healthy collection rebuilds it too (it compacts the index).
        """
        if self._is_async or not hasattr(self._client, "get_settings"):
            raise VectorStoreError(
                "rebuild() reads the database files, so it needs the embedded PersistentClient; "
                "for a Chroma server, run the rebuild with a PersistentClient on the server's "
                "persist directory while the server is stopped."
            )
        return await asyncio.to_thread(self._rebuild_sync)

    def _rebuild_sync(self) -> int:
        from chromadb_store.recovery import read_rows

        settings = self._client.get_settings()
        directory = getattr(settings, "persist_directory", None)
        if not getattr(settings, "is_persistent", False) or not directory:
            raise VectorStoreError(
                "rebuild() needs a PersistentClient: an in-memory collection has no files to "
                "rebuild from."
            )
        salvage = read_rows(directory, self.collection_name)
        spare = f"{self.collection_name}-rebuild"
        names = {getattr(c, "name", c) for c in self._client.list_collections()}
        if spare in names:
            if not salvage.rows:  # killed between deleting the old and renaming the new
                self._client.delete_collection(self.collection_name)
                self._client.get_collection(spare, embedding_function=None).modify(
                    name=self.collection_name
                )
                self._open_sync()
                return int(self._collection.count())
            self._client.delete_collection(spare)  # a partial copy; the original is complete
        if salvage.missing_vectors:
            sample = ", ".join(repr(i) for i in salvage.missing_vectors[:5])
            raise VectorStoreRecoveryError(
                f"{len(salvage.missing_vectors)} of {len(salvage.rows)} committed rows of "
                f"{self.collection_name!r} have no recoverable vector (e.g. {sample}): "
                f"{'; '.join(salvage.notes) or 'not in the log nor the index'}. Nothing was "
                "changed; re-insert those documents (their text and metadata are intact) "
                "after deleting them, or restore the folder from a backup."
            )
        space = self.space or _DEFAULT_SPACE
        metadata = dict(self._collection.metadata or {}) or None
        kwargs: dict[str, Any] = {"name": spare, "embedding_function": None}
        if metadata:
            kwargs["metadata"] = metadata
        if metadata is None or _LEGACY_SPACE_KEY not in metadata:
            kwargs["configuration"] = {"hnsw": {"space": space}}
        fresh = self._client.create_collection(**kwargs)
        rows = list(salvage.rows.values())
        step = self._max_batch or 1000
        for start in range(0, len(rows), step):
            chunk = rows[start : start + step]
            fresh.upsert(
                ids=[row.id for row in chunk],
                embeddings=[row.vector for row in chunk],
                documents=[row.document or "" for row in chunk],
                metadatas=[row.metadata or None for row in chunk]
                if any(row.metadata for row in chunk)
                else None,
            )
        self._client.delete_collection(self.collection_name)
        fresh.modify(name=self.collection_name)
        self._open_sync()
        self._dim = None
        return len(rows)


# --- conversions -----------------------------------------------------------------------------


def _is_async_client(client: Any) -> bool:
    return inspect.iscoroutinefunction(getattr(client, "get_or_create_collection", None))


def _space_of(collection: Any) -> str:
    # `configuration_json` is the raw dict; `configuration` warns about the (deliberately)
    # absent embedding function on every read.
    configuration = getattr(collection, "configuration_json", None)
    if not isinstance(configuration, dict):
        configuration = getattr(collection, "configuration", None) or {}
    for index in ("hnsw", "spann"):
        settings = configuration.get(index) if isinstance(configuration, dict) else None
        if isinstance(settings, dict) and settings.get("space"):
            return str(settings["space"])
    metadata = getattr(collection, "metadata", None) or {}
    return str(metadata.get(_LEGACY_SPACE_KEY, "l2"))  # Chroma's own default


def _cosine_score(distance: float) -> float:
    return min(1.0, max(-1.0, 1.0 - distance))


def _ip_score(distance: float) -> float:
    return 1.0 - distance


def _l2_score(distance: float) -> float:
    return 1.0 / (1.0 + max(distance, 0.0))


_SCORERS: dict[str, Callable[[float], float]] = {
    "cosine": _cosine_score,
    "ip": _ip_score,
    "l2": _l2_score,
}


def _to_chroma_metadata(metadata: Metadata | None) -> Metadata | None:
    # Chroma rejects an empty dict and treats None values as "no value": send None / drop them.
    if not metadata:
        return None
    clean = {key: value for key, value in metadata.items() if value is not None}
    return clean or None


def to_chroma_where(where: Where) -> Where:
    """A validated promptimus filter in the stricter form Chroma accepts.

    Chroma wants one key per dict and at least two items under ``$and``/``$or``: several keys
    become an explicit ``$and``, one-item lists are unwrapped.
    """
    items = list(where.items())
    if len(items) > 1:
        return {"$and": [to_chroma_where({key: value}) for key, value in items]}
    ((key, value),) = items
    if key in ("$and", "$or"):
        parts = [to_chroma_where(part) for part in value]
        return parts[0] if len(parts) == 1 else {key: parts}
    if isinstance(value, dict) and len(value) == 1:
        ((op, operand),) = value.items()
        if op in ("$in", "$nin") and isinstance(operand, list):
            return _split_membership(key, op, operand)
    return {key: value}


def _split_membership(key: str, op: str, operand: list[Any]) -> Where:
    # Chroma wants one type per $in/$nin list. Numbers compare as numbers (1 matches 1.0, as in
    # Chroma's own comparisons), so ints and floats share a list; booleans and strings get their
    # own, joined with $or ($in) or $and ($nin).
    groups: dict[type, list[Any]] = {}
    for item in operand:
        kind = bool if isinstance(item, bool) else str if isinstance(item, str) else float
        groups.setdefault(kind, []).append(item)
    numbers = groups.get(float)
    if numbers and len({type(n) for n in numbers}) > 1:
        groups[float] = [float(n) for n in numbers]
    parts = [{key: {op: items}} for items in groups.values()]
    if len(parts) == 1:
        return parts[0]
    return {"$or" if op == "$in" else "$and": parts}
