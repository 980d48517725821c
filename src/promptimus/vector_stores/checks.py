"""The input checks every vector store makes before it touches its data.

One set of rules, so a corpus that fits one store fits every store (a store filled in memory can
move to Chroma) and bad input fails the same way everywhere, with a named error:

- **Embeddings** (`InvalidEmbedding`): each a non-empty sequence (or 1-D numpy array) of real
  numbers, not ``str`` and not ``bool``; finite and within float32's range (every store keeps
  float32); all of one length, and of the store's length once it has one.
- **Metadata** (`InvalidArgument`): a ``dict`` of non-empty ``str`` keys to ``str``, ``int``,
  ``float``, ``bool`` or ``None`` (``None`` = no value). Ints fit in 64 bits, floats are finite.
  Keys starting with ``$`` (filter operators), ``#`` or ``chroma:`` (Chroma's own keys, such as
  ``chroma:document``, which holds the document text) are reserved.
- **Text** (`InvalidArgument`): ids are non-empty ``str``; ids, documents and metadata strings are
  valid Unicode (no lone surrogates, which no store can write to disk).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from promptimus.errors import InvalidArgument, InvalidEmbedding

__all__ = [
    "RESERVED_KEY_PREFIXES",
    "check_embedding",
    "check_embeddings",
    "check_insert",
    "check_metadata",
    "reserved_key_reason",
    "scalar_problem",
]

#: Metadata keys starting with one of these are refused by every store.
RESERVED_KEY_PREFIXES = ("$", "#", "chroma:")

_FLOAT32_MAX = 3.4028234663852886e38
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_PLAIN_NUMBERS = frozenset({float, int})


def is_valid_text(text: str) -> bool:
    """``text`` can be encoded as UTF-8 (it holds no lone surrogate)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def reserved_key_reason(key: Any) -> str | None:
    """Why ``key`` cannot be a metadata key (``None`` if it can)."""
    if not isinstance(key, str):
        return f"metadata keys are str, got {type(key).__name__} {key!r}"
    if not key:
        return "metadata keys cannot be empty"
    if not is_valid_text(key):
        return f"the metadata key {key!r} is not valid Unicode (it holds a lone surrogate)"
    for prefix in RESERVED_KEY_PREFIXES:
        if key.startswith(prefix):
            return (
                f"the metadata key {key!r} is reserved: keys starting with "
                f"{', '.join(repr(p) for p in RESERVED_KEY_PREFIXES)} belong to filters and "
                "to Chroma (which keeps the document text under 'chroma:document'); rename it"
            )
    return None


def scalar_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a metadata value or filter operand (``None`` if it can)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return None
        return f"the int {value} does not fit in 64 bits (stores keep 64-bit integers)"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value!r} is not a finite number"
    if isinstance(value, str):
        return None if is_valid_text(value) else f"{value!r} holds a lone surrogate"
    return f"it must be a str, int, float or bool, got {type(value).__name__} ({value!r})"


def check_metadata(metadata: Any, label: str = "metadata") -> None:
    """Raise `InvalidArgument` unless ``metadata`` is ``None`` or a metadata dict (see above)."""
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        raise InvalidArgument(f"each {label} must be a dict, got {type(metadata).__name__}.")
    for key, value in metadata.items():
        reason = reserved_key_reason(key)
        if reason is not None:
            raise InvalidArgument(f"{label}: {reason}.")
        if value is not None and (problem := scalar_problem(value)) is not None:
            raise InvalidArgument(
                f"{label} {key!r}: {value!r} is not allowed: {problem}. Values are str, int, "
                "float, bool or None (the types every store can filter on)."
            )


def check_embedding(
    embedding: Any, dimensions: int | None = None, label: str = "the query embedding"
) -> int:
    """Raise `InvalidEmbedding` unless ``embedding`` is one usable vector; return its length."""
    vector = _as_list(embedding, label)
    if dimensions is not None and len(vector) != dimensions:
        raise InvalidEmbedding(
            f"{label} has length {len(vector)}, the store holds vectors of length {dimensions}; "
            "use one embedder (and one `dimensions`) for a store."
        )
    if not vector:
        raise InvalidEmbedding(f"{label} is empty; check the embedder.")
    if not set(map(type, vector)) <= _PLAIN_NUMBERS:
        for i, component in enumerate(vector):
            if isinstance(component, bool) or not isinstance(component, numbers.Real):
                raise InvalidEmbedding(
                    f"{label}[{i}] is {component!r} ({type(component).__name__}); vector "
                    "components must be numbers (int or float), not str, bool or lists. "
                    "Pass the embedder's output unchanged."
                )
    try:
        finite = all(map(math.isfinite, vector))
    except OverflowError:  # an int beyond float's range
        finite = False
    if not finite or max(map(abs, vector)) > _FLOAT32_MAX:
        raise InvalidEmbedding(
            f"{label} contains NaN or infinity, or a number beyond float32's range; "
            "check the embedder."
        )
    return len(vector)


def check_embeddings(embeddings: Any, dimensions: int | None = None) -> int | None:
    """Raise `InvalidEmbedding` unless ``embeddings`` is a list of usable vectors of one length
    (``dimensions``, if the store has one); return that length (``None`` for no vectors)."""
    if isinstance(embeddings, str | bytes) or not isinstance(embeddings, (Sequence, *_ndarray())):
        raise InvalidEmbedding(
            f"embeddings must be a list of vectors, got {type(embeddings).__name__}."
        )
    # a Sequence or a numpy array, as checked above (a dynamic type tuple the checker cannot read)
    for i, embedding in enumerate(cast(Iterable[Any], embeddings)):
        length = check_embedding(embedding, dimensions, f"embeddings[{i}]")
        if dimensions is None:
            dimensions = length
    return dimensions


def check_insert(
    embeddings: Any,
    documents: list[str],
    ids: list[str],
    metadatas: list[Any] | None,
    *,
    dimensions: int | None = None,
) -> int | None:
    """Every check an ``insert`` makes before touching the store's data: one embedding, document
    and metadata per id; valid ids, documents, metadata and embeddings (of length ``dimensions``
    once the store has one). ``embeddings=None`` checks documents stored without embeddings.
    Returns the embeddings' length (``None`` without embeddings)."""
    for name, value in (("ids", ids), ("documents", documents), ("metadatas", metadatas)):
        if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence | None):
            raise InvalidArgument(f"{name} must be a list, got {type(value).__name__}.")
    n = len(ids)
    counts = (
        n if embeddings is None else len(embeddings),
        len(documents),
        n if metadatas is None else len(metadatas),
    )
    if counts != (n, n, n):
        got_embeddings = "" if embeddings is None else f"{len(embeddings)} embeddings, "
        raise InvalidArgument(
            f"insert needs one {'' if embeddings is None else 'embedding, '}document and "
            f"metadata per id; got {got_embeddings}{len(documents)} documents, {n} ids and "
            f"{'no' if metadatas is None else len(metadatas)} metadatas."
        )
    for doc_id in ids:
        if not isinstance(doc_id, str) or not doc_id:
            raise InvalidArgument(f"ids must be non-empty strings, got {doc_id!r}.")
        if not is_valid_text(doc_id):
            raise InvalidArgument(f"the id {doc_id!r} holds a lone surrogate; ids are Unicode.")
    for i, document in enumerate(documents):
        if not isinstance(document, str):
            raise InvalidArgument(f"documents must be str, got {type(document).__name__}.")
        if not is_valid_text(document):
            raise InvalidArgument(
                f"documents[{i}] holds a lone surrogate (broken Unicode, often from decoding "
                "with errors='surrogateescape'); decode the text properly."
            )
    for i, metadata in enumerate(metadatas or ()):
        check_metadata(metadata, f"metadatas[{i}]")
    if embeddings is None:
        return None
    return check_embeddings(embeddings, dimensions)


def _as_list(embedding: Any, label: str) -> list[Any]:
    if isinstance(embedding, list):
        return embedding
    dtype = getattr(embedding, "dtype", None)
    if dtype is not None and hasattr(embedding, "tolist"):  # a numpy array
        if getattr(embedding, "ndim", 1) != 1 or dtype.kind not in "fiu":
            raise InvalidEmbedding(
                f"{label} must be a 1-D array of numbers, got shape "
                f"{getattr(embedding, 'shape', '?')} of {dtype}."
            )
        return list(embedding.tolist())
    if isinstance(embedding, str | bytes | Mapping) or not isinstance(embedding, Sequence):
        raise InvalidEmbedding(
            f"{label} must be a list of numbers, got {type(embedding).__name__}."
        )
    return list(embedding)


def _ndarray() -> tuple[type, ...]:
    # numpy stays unimported unless the caller already uses it.
    import sys

    numpy = sys.modules.get("numpy")
    return (numpy.ndarray,) if numpy is not None else ()
