"""Reading a persistent Chroma collection's committed rows straight from disk, for a rebuild.

A ``PersistentClient`` keeps each collection in three places (chromadb 1.x):

- ``chroma.sqlite3``: the metadata segment (every committed id with its document and metadata,
  tables ``embeddings`` and ``embedding_metadata``) and the write-ahead log ``embeddings_queue``
  (every write, vectors included, until the vector index has persisted it; then it is purged);
- ``<vector segment id>/``: the HNSW index: ``header.bin``, ``data_level0.bin`` (each element's
  links, vector and label), and ``index_metadata.pickle`` (label <-> id), which chromadb rewrites
  in place, so a process killed at the wrong moment leaves it empty. Chroma then refuses the
  collection (``InternalError: ... hnsw segment ...``) for good. chromadb 1.5 has no repair
  command (``chroma vacuum`` leaves such a collection broken).

`read_rows` rebuilds the latest state of every committed row from these: documents and metadata
from the metadata segment with the log replayed over it; each vector from the log if it is
still there, else from the index files, using the pickle or, if the pickle is lost, the order in
which chromadb labels new ids (checked against every vector the log still holds). Only reads.
"""

from __future__ import annotations

import json
import math
import pickle
import sqlite3
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Row", "Salvage", "read_rows"]

_ADD, _UPDATE, _UPSERT, _DELETE = 0, 1, 2, 3
_DOCUMENT_KEY = "chroma:document"
_HEADER = struct.Struct("<i6Q")  # version, offsetLevel0, max, count, element size, label, data


@dataclass
class Row:
    id: str
    document: str | None
    metadata: dict[str, Any]
    vector: list[float] | None = None


@dataclass
class Salvage:
    """What the files hold: ``rows`` by id, and what could not be recovered."""

    rows: dict[str, Row]
    missing_vectors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_rows(persist_directory: str | Path, collection_name: str) -> Salvage:
    root = Path(persist_directory)
    uri = (root / "chroma.sqlite3").resolve().as_uri() + "?mode=ro"
    db = sqlite3.connect(uri, uri=True)
    try:
        return _read(db, root, collection_name)
    finally:
        db.close()


def _read(db: sqlite3.Connection, root: Path, name: str) -> Salvage:
    found = db.execute("SELECT id, dimension FROM collections WHERE name = ?", (name,)).fetchall()
    if len(found) != 1:
        raise LookupError(f"{len(found)} collections named {name!r} in {root}")
    ((collection_id, dimension),) = found
    segments = dict(
        db.execute("SELECT scope, id FROM segments WHERE collection = ?", (collection_id,))
    )
    metadata_segment, vector_segment = segments.get("METADATA"), segments.get("VECTOR")
    seq = dict(db.execute("SELECT segment_id, seq_id FROM max_seq_id"))
    rows = _metadata_segment_rows(db, metadata_segment)
    # The log: every write not yet purged, in order. Writes the metadata segment has not applied
    # are committed too; replay them over its rows.
    applied = int(seq.get(metadata_segment, 0) or 0)
    log = db.execute(
        "SELECT seq_id, operation, id, vector, encoding, metadata FROM embeddings_queue "
        "WHERE topic LIKE ? ORDER BY seq_id",
        (f"%/{collection_id}",),
    ).fetchall()
    log_vectors: dict[str, list[float] | None] = {}
    for seq_id, operation, doc_id, blob, encoding, metadata_json in log:
        vector = _decode(blob, encoding)
        exists = doc_id in rows
        if operation == _DELETE:
            if seq_id > applied:
                rows.pop(doc_id, None)
            log_vectors[doc_id] = None
            continue
        if operation == _ADD and exists and seq_id > applied:
            continue
        if operation == _UPDATE and not exists:
            continue
        if vector is not None:
            log_vectors[doc_id] = vector
        if seq_id <= applied:
            continue
        metadata = json.loads(metadata_json) if metadata_json else {}
        row = rows.get(doc_id) if operation in (_UPDATE, _UPSERT) else None
        if row is None:
            row = rows[doc_id] = Row(doc_id, None, {})
        for key, value in metadata.items():
            if key == _DOCUMENT_KEY:
                row.document = value
            elif value is None:
                row.metadata.pop(key, None)
            else:
                row.metadata[key] = value
    salvage = Salvage(rows)
    folder = root / str(vector_segment)
    index_vectors = _index_vectors(folder, dimension, rows, log_vectors, salvage)
    for doc_id, row in rows.items():
        row.vector = log_vectors.get(doc_id) or index_vectors.get(doc_id)
        if row.vector is None:
            salvage.missing_vectors.append(doc_id)
    return salvage


def _metadata_segment_rows(db: sqlite3.Connection, segment: str | None) -> dict[str, Row]:
    rows: dict[str, Row] = {}
    by_key: dict[int, Row] = {}
    for key, doc_id, _ in db.execute(
        "SELECT id, embedding_id, seq_id FROM embeddings WHERE segment_id = ? ORDER BY seq_id",
        (segment,),
    ):
        by_key[key] = rows[doc_id] = Row(doc_id, None, {})
    for key, name, text, integer, real, boolean in db.execute(
        "SELECT m.id, m.key, m.string_value, m.int_value, m.float_value, m.bool_value "
        "FROM embedding_metadata m JOIN embeddings e ON e.id = m.id WHERE e.segment_id = ?",
        (segment,),
    ):
        row = by_key[key]
        if name == _DOCUMENT_KEY:
            row.document = text
        elif name.startswith("chroma:"):
            continue
        elif boolean is not None:
            row.metadata[name] = bool(boolean)
        else:
            row.metadata[name] = next((v for v in (text, integer, real) if v is not None), None)
    return rows


def _decode(blob: bytes | None, encoding: str | None) -> list[float] | None:
    if blob is None:
        return None
    if encoding not in (None, "FLOAT32"):
        raise ValueError(f"unknown vector encoding {encoding!r} in the log")
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


def _index_vectors(
    folder: Path,
    dimension: int | None,
    rows: dict[str, Row],
    log_vectors: dict[str, list[float] | None],
    salvage: Salvage,
) -> dict[str, list[float]]:
    """Vectors by id from the HNSW files (the ones the log no longer holds)."""
    if not dimension or not (folder / "header.bin").is_file():
        return {}
    header = (folder / "header.bin").read_bytes()
    if len(header) < _HEADER.size:
        salvage.notes.append("the index header is cut short")
        return {}
    _, offset0, _, count, element_size, label_offset, data_offset = _HEADER.unpack_from(header)
    data = (folder / "data_level0.bin").read_bytes()
    count = min(count, (len(data) - offset0) // element_size if element_size else 0)
    by_label: dict[int, list[float]] = {}
    vector = struct.Struct(f"<{dimension}f")
    for element in range(count):
        start = offset0 + element * element_size
        (label,) = struct.unpack_from("<Q", data, start + label_offset)
        by_label[label] = list(vector.unpack_from(data, start + data_offset))
    labels = _labels_from_pickle(folder / "index_metadata.pickle", salvage)
    if labels is None:
        labels = _labels_from_order(rows, by_label, log_vectors, salvage)
    return {doc_id: by_label[label] for doc_id, label in labels.items() if label in by_label}


def _labels_from_pickle(path: Path, salvage: Salvage) -> dict[str, int] | None:
    try:
        with path.open("rb") as handle:
            # chromadb writes a plain dict of str/int maps; refuse anything else.
            state = _SafeUnpickler(handle).load()
        labels = state["id_to_label"]
        if not all(isinstance(k, str) and isinstance(v, int) for k, v in labels.items()):
            raise ValueError("unexpected id map")
        return dict(labels)
    except (OSError, EOFError, KeyError, TypeError, ValueError, pickle.UnpicklingError) as exc:
        salvage.notes.append(f"the index's id map is unreadable ({type(exc).__name__})")
        return None


class _SafeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name}")


def _labels_from_order(
    rows: dict[str, Row],
    by_label: dict[int, list[float]],
    log_vectors: dict[str, list[float] | None],
    salvage: Salvage,
) -> dict[str, int]:
    """chromadb gives each new id the next label (1, 2, ...) in log order. Without the id map,
    map the rows in that order, and trust it only if every vector the log still holds agrees."""
    order = list(rows)  # metadata-segment rows in seq order, then rows only the log holds
    labels = {doc_id: i for i, doc_id in enumerate(order, start=1)}
    checked = 0
    for doc_id, vector in log_vectors.items():
        label = labels.get(doc_id)
        if vector is None or label is None or label not in by_label:
            continue
        if not _same_direction(vector, by_label[label]):
            salvage.notes.append(
                "the index's labels do not follow insertion order (ids were replaced or "
                "deleted), so vectors the log no longer holds cannot be matched to ids"
            )
            return {}
        checked += 1
    if len(by_label) > len(order) or checked == 0:
        salvage.notes.append(
            "the index's vectors cannot be matched to ids without its id map (no vector in the "
            "log confirms the order)"
        )
        return {}
    return labels


def _same_direction(a: list[float], b: list[float]) -> bool:
    # The cosine space stores unit vectors: compare directions, not raw numbers.
    norm_a = math.sqrt(sum(x * x for x in a))
    norm_b = math.sqrt(sum(x * x for x in b))
    if norm_a == 0.0 or norm_b == 0.0:
        return norm_a == norm_b
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return abs(dot / (norm_a * norm_b) - 1.0) < 1e-5 and (
        abs(norm_a - norm_b) < 1e-4 * max(norm_a, 1.0) or abs(norm_b - 1.0) < 1e-4
    )
