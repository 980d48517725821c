"""``InMemoryVectorStore``: exact search over a numpy matrix, BM25 text search, file persistence.

Made for small and medium corpora (up to some hundred thousand documents): every search scores all
rows with one matrix-vector product, so results are exact, not approximate.

Scores (higher is better), the same as the Chroma plugin's:

- ``cosine``: cosine similarity in ``[-1, 1]`` (a zero vector scores 0 against everything);
- ``ip``: the inner product;
- ``l2``: ``1 / (1 + d)`` where ``d`` is the squared Euclidean distance, in ``(0, 1]``.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import threading
import zipfile
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from promptimus.embedders.hashing import tokenize
from promptimus.errors import (
    InvalidArgument,
    InvalidEmbedding,
    OptionalDependencyMissing,
    TextSearchUnsupported,
    VectorStoreError,
)
from promptimus.vector_stores.base import (
    Metadata,
    Predicate,
    SearchHit,
    Where,
    check_insert,
    check_n_results,
    check_query,
    compile_where,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = ["InMemoryVectorStore", "Space"]

Space = Literal["cosine", "l2", "ip"]
_SPACES = ("cosine", "l2", "ip")
_FORMAT = "promptimus.InMemoryVectorStore"
_VERSION = 1


def _require_numpy() -> None:
    """Import numpy where the first vector needs it; its absence is named with the extra that
    installs it (text-only use needs no numpy)."""
    try:
        import numpy  # noqa: F401
    except ImportError as exc:
        raise OptionalDependencyMissing(
            "InMemoryVectorStore keeps its vectors in numpy, which is not installed: "
            "pip install 'promptimus[numpy]' (storing text only, for text_search, needs no numpy)."
        ) from exc


class _BM25:
    """Okapi BM25 over an inverted index keyed by document id (so row moves do not matter)."""

    __slots__ = ("b", "k1", "lengths", "postings", "total_length")

    def __init__(self, k1: float, b: float) -> None:
        self.k1 = k1
        self.b = b
        self.postings: dict[str, dict[str, int]] = {}
        self.lengths: dict[str, int] = {}
        self.total_length = 0

    def add(self, doc_id: str, text: str) -> None:
        terms = Counter(tokenize(text))
        postings = self.postings
        for term, tf in terms.items():
            bucket = postings.get(term)
            if bucket is None:
                postings[term] = {doc_id: tf}
            else:
                bucket[doc_id] = tf
        length = sum(terms.values())
        self.lengths[doc_id] = length
        self.total_length += length

    def remove(self, doc_id: str, text: str) -> None:
        postings = self.postings
        for term in set(tokenize(text)):
            bucket = postings.get(term)
            if bucket is not None:
                bucket.pop(doc_id, None)
                if not bucket:
                    del postings[term]
        self.total_length -= self.lengths.pop(doc_id, 0)

    def scores(self, query: str) -> dict[str, float]:
        """BM25 score of every document sharing at least one term with ``query``."""
        n_docs = len(self.lengths)
        if not n_docs:
            return {}
        k1, b = self.k1, self.b
        average = self.total_length / n_docs or 1.0
        lengths = self.lengths
        scores: dict[str, float] = {}
        for term in dict.fromkeys(tokenize(query)):
            bucket = self.postings.get(term)
            if not bucket:
                continue
            # Lucene's idf: always positive, so a very common term still counts a little.
            idf = math.log(1.0 + (n_docs - len(bucket) + 0.5) / (len(bucket) + 0.5))
            for doc_id, tf in bucket.items():
                norm = k1 * (1.0 - b + b * lengths[doc_id] / average)
                scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (k1 + 1.0) / (tf + norm)
        return scores


class InMemoryVectorStore:
    """An exact, in-process vector store with optional BM25 text search and file persistence.

    - ``space``: ``"cosine"`` (default), ``"ip"`` or ``"l2"``; see the module docstring for scores.
    - ``text_search``: keep a BM25 index so ``text_search`` works (hybrid retrieval).
    - ``path``: a file to load from if it exists, and to save to after every change
      (``autosave=False`` to save only when ``save()`` is called). Saves are atomic.
    - Inserting an existing id replaces that document (upsert); ids are never duplicated.
    - `insert_text_only` stores documents without an embedding: ``text_search`` finds them,
      ``search`` never does (as the original promptimus' ``MemoryStore.text_insert`` did).

    numpy is imported when the first vector arrives, not when promptimus is imported.
    """

    #: The class of the hits this store returns; a subclass may return a `SearchHit` subclass.
    hit_type: ClassVar[type[SearchHit]] = SearchHit

    def __init__(
        self,
        space: Space = "cosine",
        text_search: bool = True,
        path: str | os.PathLike[str] | None = None,
        *,
        autosave: bool = True,
        bm25_k1: float = 1.5,
        bm25_b: float = 0.75,
    ) -> None:
        if space not in _SPACES:
            raise InvalidArgument(f"space must be one of {_SPACES}, got {space!r}.")
        self.space: Space = space
        self.supports_text_search = bool(text_search)
        self.path = Path(path) if path is not None else None
        self.autosave = autosave
        self._bm25 = _BM25(bm25_k1, bm25_b) if text_search else None
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._documents: list[str] = []
        self._metadatas: list[Metadata] = []
        self._text_only: dict[str, tuple[str, Metadata]] = {}  # id -> (document, metadata)
        self._matrix: np.ndarray | None = None  # capacity rows; the first len(_ids) are live
        self._sq_norms: np.ndarray | None = None  # squared norms, for l2
        self._dim: int | None = None
        self._lock = threading.RLock()
        self._save_lock = threading.Lock()
        self._version = 0
        self._saved_version = 0
        if self.path is not None and self.path.exists():
            self._restore(self.path)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(space={self.space!r}, count={len(self)}, "
            f"text_search={self.supports_text_search}, path={self.path!r})"
        )

    def __len__(self) -> int:
        return len(self._ids) + len(self._text_only)

    @property
    def dimensions(self) -> int | None:
        """Length of the stored vectors (``None`` until the first insert)."""
        return self._dim

    # --- protocol ------------------------------------------------------------------------------

    async def insert(
        self,
        embeddings: list[list[float]],
        documents: list[str],
        ids: list[str],
        metadatas: list[Metadata] | None = None,
    ) -> list[str]:
        """Add or replace documents; returns ``ids``. A repeated id in one call: the last wins."""
        snapshot = self._insert(embeddings, documents, ids, metadatas)
        if snapshot is not None:
            await asyncio.to_thread(self._write, *snapshot)
        return list(ids)

    async def search(
        self, embedding: list[float], n_results: int = 10, where: Where | None = None
    ) -> list[SearchHit]:
        """The ``n_results`` nearest documents, best first, among those matching ``where``."""
        return self.search_sync(embedding, n_results, where)

    async def text_search(
        self, query: str, n_results: int = 10, where: Where | None = None
    ) -> list[SearchHit]:
        """BM25 search; only documents sharing at least one word with ``query`` are returned."""
        return self.text_search_sync(query, n_results, where)

    async def insert_text_only(
        self,
        documents: list[str],
        ids: list[str],
        metadatas: list[Metadata] | None = None,
    ) -> list[str]:
        """Add or replace documents that have no embedding; returns ``ids``.

        They are found by ``text_search`` only. An id that had an embedding loses it (upsert).
        Needs a store created with ``text_search=True``.
        """
        snapshot = self._insert_text_only(documents, ids, metadatas)
        if snapshot is not None:
            await asyncio.to_thread(self._write, *snapshot)
        return list(ids)

    async def delete(self, ids: list[str]) -> None:
        """Remove these ids; unknown ids are ignored."""
        snapshot = self._delete(ids)
        if snapshot is not None:
            await asyncio.to_thread(self._write, *snapshot)

    async def count(self) -> int:
        return len(self)

    # --- reading -------------------------------------------------------------------------------

    def get(self, ids: list[str]) -> list[SearchHit | None]:
        """The stored documents for ``ids`` (score 1.0), ``None`` where an id is unknown."""
        with self._lock:
            out: list[SearchHit | None] = []
            for doc_id in ids:
                row = self._rows.get(doc_id)
                if row is not None:
                    out.append(self._hit(row, 1.0))
                elif doc_id in self._text_only:
                    out.append(self._text_hit(doc_id, 1.0))
                else:
                    out.append(None)
            return out

    def search_sync(
        self, embedding: list[float], n_results: int = 10, where: Where | None = None
    ) -> list[SearchHit]:
        predicate = check_query(embedding, n_results, where, self._dim)
        _require_numpy()
        import numpy as np

        with self._lock:
            size = len(self._ids)
            if size == 0 or n_results == 0:
                return []
            assert self._matrix is not None and self._sq_norms is not None
            query = np.asarray(embedding, dtype=np.float32)
            if query.shape != (self._dim,):  # the store's length changed since the check
                raise InvalidEmbedding(
                    f"the query embedding has shape {query.shape}, the store holds vectors of "
                    f"length {self._dim}; embed the query with the embedder used for the documents."
                )
            rows = self._matching_rows(predicate, size)
            if rows is not None and rows.size == 0:
                return []
            matrix = self._matrix[:size] if rows is None else self._matrix[rows]
            scores = matrix @ query
            if self.space == "cosine":
                query_norm = float(np.linalg.norm(query))
                if query_norm > 0.0:
                    scores = np.clip(scores / query_norm, -1.0, 1.0)
                else:
                    scores = np.zeros_like(scores)
            elif self.space == "l2":
                sq_norms = self._sq_norms[:size] if rows is None else self._sq_norms[rows]
                distances = np.maximum(sq_norms - 2.0 * scores + float(query @ query), 0.0)
                scores = 1.0 / (1.0 + distances)
            best = _top_k(scores, n_results)
            return [
                self._hit(int(rows[i]) if rows is not None else int(i), float(scores[i]))
                for i in best
            ]

    def text_search_sync(
        self, query: str, n_results: int = 10, where: Where | None = None
    ) -> list[SearchHit]:
        if self._bm25 is None:
            raise TextSearchUnsupported(
                "this InMemoryVectorStore was created with text_search=False; create it with "
                "text_search=True to search by words."
            )
        if not isinstance(query, str):
            raise InvalidArgument(f"text_search takes a str query, got {type(query).__name__}.")
        predicate = compile_where(where)
        check_n_results(n_results)
        with self._lock:
            scores = self._bm25.scores(query)
            if predicate is not None:
                scores = {i: s for i, s in scores.items() if predicate(self._metadata_of(i))}
            if not scores or n_results == 0:
                return []
            order = sorted(scores.items(), key=lambda item: -item[1])[:n_results]
            rows = self._rows
            return [
                self._hit(rows[doc_id], score) if doc_id in rows else self._text_hit(doc_id, score)
                for doc_id, score in order
            ]

    def _metadata_of(self, doc_id: str) -> Metadata:
        row = self._rows.get(doc_id)
        return self._metadatas[row] if row is not None else self._text_only[doc_id][1]

    def _hit(self, row: int, score: float) -> SearchHit:
        return self.hit_type(
            self._ids[row], self._documents[row], score, dict(self._metadatas[row])
        )

    def _text_hit(self, doc_id: str, score: float) -> SearchHit:
        document, metadata = self._text_only[doc_id]
        return self.hit_type(doc_id, document, score, dict(metadata))

    def _matching_rows(self, predicate: Predicate | None, size: int) -> np.ndarray | None:
        if predicate is None:
            return None
        _require_numpy()
        import numpy as np

        metadatas = self._metadatas
        return np.fromiter((row for row in range(size) if predicate(metadatas[row])), dtype=np.intp)

    # --- writing -------------------------------------------------------------------------------

    def _insert(
        self,
        embeddings: list[list[float]],
        documents: list[str],
        ids: list[str],
        metadatas: list[Metadata] | None,
    ) -> tuple[bytes, int] | None:
        check_insert(embeddings, documents, ids, metadatas, dimensions=self._dim)
        n = len(ids)
        if n == 0:
            return None
        clean_metadatas = [_clean_metadata(m) for m in metadatas] if metadatas else [{}] * n
        _require_numpy()
        import numpy as np

        vectors = np.asarray(embeddings, dtype=np.float32)
        if self._dim is not None and vectors.shape[1] != self._dim:
            # Another thread's first insert set the length after our check.
            raise InvalidEmbedding(
                f"embeddings must be vectors of length {self._dim}; got an array of shape "
                f"{vectors.shape}. Use one embedder (and one `dimensions`) for a store."
            )
        if self.space == "cosine":
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        with self._lock:
            if self._dim is None:
                self._dim = int(vectors.shape[1])
            last = {doc_id: i for i, doc_id in enumerate(ids)}  # last occurrence wins
            for doc_id in last:
                if doc_id in self._text_only:  # it gets an embedding: a vector row from now on
                    self._remove(doc_id)
            new = [doc_id for doc_id in last if doc_id not in self._rows]
            self._reserve(len(self._ids) + len(new))
            assert self._matrix is not None and self._sq_norms is not None
            bm25 = self._bm25
            for doc_id, i in last.items():
                row = self._rows.get(doc_id)
                if row is None:
                    row = len(self._ids)
                    self._rows[doc_id] = row
                    self._ids.append(doc_id)
                    self._documents.append(documents[i])
                    self._metadatas.append(clean_metadatas[i])
                else:
                    if bm25 is not None:
                        bm25.remove(doc_id, self._documents[row])
                    self._documents[row] = documents[i]
                    self._metadatas[row] = clean_metadatas[i]
                if bm25 is not None:
                    bm25.add(doc_id, documents[i])
            rows = np.fromiter((self._rows[doc_id] for doc_id in last), dtype=np.intp)
            source = np.fromiter(last.values(), dtype=np.intp)
            chosen = vectors[source]
            self._matrix[rows] = chosen
            self._sq_norms[rows] = np.einsum("ij,ij->i", chosen, chosen)
            return self._changed()

    def _reserve(self, size: int) -> None:
        _require_numpy()
        import numpy as np

        assert self._dim is not None
        capacity = 0 if self._matrix is None else self._matrix.shape[0]
        if size <= capacity:
            return
        new_capacity = max(size, 2 * capacity, 64)
        matrix = np.zeros((new_capacity, self._dim), dtype=np.float32)
        sq_norms = np.zeros(new_capacity, dtype=np.float32)
        live = len(self._ids)
        if self._matrix is not None and self._sq_norms is not None:
            matrix[:live] = self._matrix[:live]
            sq_norms[:live] = self._sq_norms[:live]
        self._matrix, self._sq_norms = matrix, sq_norms

    def _insert_text_only(
        self, documents: list[str], ids: list[str], metadatas: list[Metadata] | None
    ) -> tuple[bytes, int] | None:
        if self._bm25 is None:
            raise TextSearchUnsupported(
                "documents without embeddings can only be found by text search, and this "
                f"{type(self).__name__} was created with text_search=False; create it with "
                "text_search=True."
            )
        check_insert(None, documents, ids, metadatas)
        if not ids:
            return None
        clean = [_clean_metadata(m) for m in metadatas] if metadatas else [{}] * len(ids)
        with self._lock:
            bm25 = self._bm25
            for doc_id, i in {doc_id: i for i, doc_id in enumerate(ids)}.items():
                self._remove(doc_id)
                self._text_only[doc_id] = (documents[i], clean[i])
                bm25.add(doc_id, documents[i])
            return self._changed()

    def _delete(self, ids: list[str]) -> tuple[bytes, int] | None:
        if isinstance(ids, str):
            raise InvalidArgument("delete takes a list of ids, got a single str; wrap it in [].")
        with self._lock:
            removed = False
            for doc_id in dict.fromkeys(ids):
                removed = self._remove(doc_id) or removed
            return self._changed() if removed else None

    def _remove(self, doc_id: str) -> bool:
        """Remove one document, with or without embedding (called under the lock)."""
        text_only = self._text_only.pop(doc_id, None)
        if text_only is not None:
            if self._bm25 is not None:
                self._bm25.remove(doc_id, text_only[0])
            return True
        row = self._rows.pop(doc_id, None)
        if row is None:
            return False
        if self._bm25 is not None:
            self._bm25.remove(doc_id, self._documents[row])
        last = len(self._ids) - 1
        if row != last:  # move the last row into the hole: rows stay contiguous
            moved = self._ids[last]
            self._ids[row] = moved
            self._documents[row] = self._documents[last]
            self._metadatas[row] = self._metadatas[last]
            assert self._matrix is not None and self._sq_norms is not None
            self._matrix[row] = self._matrix[last]
            self._sq_norms[row] = self._sq_norms[last]
            self._rows[moved] = row
        self._ids.pop()
        self._documents.pop()
        self._metadatas.pop()
        return True

    def clear(self) -> None:
        """Remove every document (the vector length is kept)."""
        with self._lock:
            self._ids.clear()
            self._rows.clear()
            self._documents.clear()
            self._metadatas.clear()
            self._text_only.clear()
            if self._bm25 is not None:
                self._bm25 = _BM25(self._bm25.k1, self._bm25.b)
            snapshot = self._changed()
        if snapshot is not None:
            self._write(*snapshot)

    def _changed(self) -> tuple[bytes, int] | None:
        """Bump the version; with autosave on, return the bytes to write (called under the lock)."""
        self._version += 1
        if self.path is None or not self.autosave:
            return None
        return self._serialize(), self._version

    # --- persistence ---------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the store atomically to ``path`` (default: the store's ``path``); returns it.

        The file is a zip holding ``store.json`` (ids, documents, metadata, settings) and
        ``vectors.npy``; a crash mid-save leaves the previous file intact.
        """
        target = Path(path) if path is not None else self.path
        if target is None:
            raise InvalidArgument(
                "save() needs a path: pass one, or create the store with path=..."
            )
        with self._lock:
            data, version = self._serialize(), self._version
        if target == self.path:
            self._write(data, version)
        else:
            _atomic_write(target, data)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, autosave: bool = False) -> InMemoryVectorStore:
        """A store read from a file written by ``save``; it saves back there if ``autosave``."""
        path = Path(path)
        if not path.exists():
            raise VectorStoreError(f"no vector store file at {path}; check the path.")
        header = _read_header(path)
        settings = header.get("settings", {})
        store = cls(
            space=header.get("space", "cosine"),
            text_search=bool(header.get("text_search", True)),
            path=None,
            autosave=autosave,
            bm25_k1=float(settings.get("bm25_k1", 1.5)),
            bm25_b=float(settings.get("bm25_b", 0.75)),
        )
        store._restore(path)
        store.path = path
        return store

    def _serialize(self) -> bytes:
        _require_numpy()
        import numpy as np

        size = len(self._ids)
        header = {
            "format": _FORMAT,
            "version": _VERSION,
            "space": self.space,
            "text_search": self.supports_text_search,
            "dimensions": self._dim,
            "settings": (
                {"bm25_k1": self._bm25.k1, "bm25_b": self._bm25.b} if self._bm25 is not None else {}
            ),
            "ids": self._ids,
            "documents": self._documents,
            "metadatas": self._metadatas,
        }
        if self._text_only:
            header["text_only"] = {
                "ids": list(self._text_only),
                "documents": [document for document, _ in self._text_only.values()],
                "metadatas": [metadata for _, metadata in self._text_only.values()],
            }
        vectors = io.BytesIO()
        matrix = (
            self._matrix[:size]
            if self._matrix is not None
            else np.zeros((0, self._dim or 0), dtype=np.float32)
        )
        np.save(vectors, matrix, allow_pickle=False)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
            archive.writestr("store.json", json.dumps(header, ensure_ascii=False))
            archive.writestr("vectors.npy", vectors.getvalue())
        return buffer.getvalue()

    def _write(self, data: bytes, version: int) -> None:
        # Concurrent autosaves may finish out of order; never let an older snapshot win.
        assert self.path is not None
        with self._save_lock:
            if version <= self._saved_version:
                return
            _atomic_write(self.path, data)
            self._saved_version = version

    def _restore(self, path: Path) -> None:
        _require_numpy()
        import numpy as np

        try:
            with zipfile.ZipFile(path) as archive:
                header = json.loads(archive.read("store.json"))
                matrix = np.load(io.BytesIO(archive.read("vectors.npy")), allow_pickle=False)
            if header.get("format") != _FORMAT:
                raise ValueError("not an InMemoryVectorStore file")
            ids, documents = list(header["ids"]), list(header["documents"])
            metadatas = [dict(m) for m in header["metadatas"]]
            if not len(ids) == len(documents) == len(metadatas) == matrix.shape[0]:
                raise ValueError("ids, documents, metadata and vectors differ in length")
            text_only = _read_text_only(header.get("text_only", {}))
        except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile) as exc:
            raise VectorStoreError(
                f"cannot read the vector store file {path}: {exc}. It must be a file written by "
                "InMemoryVectorStore.save(); delete it to start an empty store."
            ) from exc
        if header.get("space", self.space) != self.space:
            raise VectorStoreError(
                f"{path} holds a {header['space']!r} store but this store uses {self.space!r}; "
                f"create it with space={header['space']!r}."
            )
        if text_only and self._bm25 is None:
            raise VectorStoreError(
                f"{path} holds {len(text_only)} documents without embeddings, which only text "
                "search can find; create the store with text_search=True."
            )
        with self._lock:
            self._ids, self._documents, self._metadatas = ids, documents, metadatas
            self._rows = {doc_id: row for row, doc_id in enumerate(ids)}
            dim = header.get("dimensions")
            self._dim = int(dim) if dim is not None else None
            self._matrix = np.ascontiguousarray(matrix, dtype=np.float32) if ids else None
            if self._matrix is not None:
                self._sq_norms = np.einsum("ij,ij->i", self._matrix, self._matrix)
            if self._bm25 is not None:
                self._bm25 = _BM25(self._bm25.k1, self._bm25.b)
                for doc_id, document in zip(ids, documents, strict=True):
                    self._bm25.add(doc_id, document)
                for doc_id, (document, _) in text_only.items():
                    self._bm25.add(doc_id, document)
            self._text_only = text_only


def _read_text_only(section: Any) -> dict[str, tuple[str, Metadata]]:
    if not isinstance(section, dict):
        raise ValueError("the text-only section is not a table of ids, documents and metadata")
    ids, documents = list(section.get("ids", [])), list(section.get("documents", []))
    metadatas = [dict(m) for m in section.get("metadatas", [])]
    if not len(ids) == len(documents) == len(metadatas):
        raise ValueError("the text-only ids, documents and metadata differ in length")
    return {
        doc_id: (document, metadata)
        for doc_id, document, metadata in zip(ids, documents, metadatas, strict=True)
    }


def _read_header(path: Path) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(path) as archive:
            header = json.loads(archive.read("store.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise VectorStoreError(
            f"cannot read the vector store file {path}: {exc}. It must be a file written by "
            "InMemoryVectorStore.save()."
        ) from exc
    if not isinstance(header, dict):
        raise VectorStoreError(f"{path} is not a vector store file written by promptimus.")
    return header


def _atomic_write(path: Path, data: bytes) -> None:
    # the core's writer names its temporary files by writer, so a save after a crash (kill -9
    # during an autosave) removes what the dead writer left
    from ..checkpoint.files import atomic_write_bytes

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)


def _clean_metadata(metadata: Metadata | None) -> Metadata:
    # Checked by check_insert. None means "no value", as in Chroma: the key is dropped, so
    # filters see it as missing.
    if metadata is None:
        return {}
    return {key: value for key, value in metadata.items() if value is not None}


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indexes of the ``k`` highest scores, best first (ties broken by position)."""
    _require_numpy()
    import numpy as np

    size = scores.shape[0]
    if k >= size:
        return np.argsort(-scores, kind="stable")
    candidates = np.argpartition(-scores, k - 1)[:k]
    candidates.sort()  # so the stable sort below breaks ties by position
    return candidates[np.argsort(-scores[candidates], kind="stable")]
