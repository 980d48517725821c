"""`BaseSearchResult`: the original promptimus' search result type, as a `SearchHit`.

The original (0.1) returned pydantic models ``BaseSearchResult(idx, content, score=0.0)``; we
return `SearchHit(id, document, score, metadata)`. Rather than a second result type, the old name
is a `SearchHit` that is also built and read with the old names, so one object goes through every
store, reranker and module of either API.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import FrozenInstanceError, replace
from typing import Any, Generic, TypeVar

from promptimus.dto import Metadata, SearchHit
from promptimus.errors import InvalidArgument

__all__ = ["BaseSearchResult"]

ID = TypeVar("ID", bound=Hashable)

_UNSET: Any = object()
_OLD_NAMES = {"idx": "id", "content": "document"}


class BaseSearchResult(SearchHit, Generic[ID]):
    """A `SearchHit` built with the original's names: ``BaseSearchResult(idx=..., content=...)``.

    - ``idx``/``id`` and ``content``/``document`` are two names for the same field (positional
      order is the same in both: id, text, score, metadata); ``score`` defaults to ``0.0`` as in
      the original. Subscripting (``BaseSearchResult[str]``) works as it did for type hints.
    - Of the original's pydantic methods it keeps ``model_copy(update=...)`` (the original's
      reranker used it) and ``model_dump()`` (the original's three fields).
    """

    __slots__ = ()

    def __init__(
        self,
        idx: Any = _UNSET,
        content: Any = _UNSET,
        score: float = 0.0,
        metadata: Metadata | None = None,
        *,
        id: Any = _UNSET,  # the field's name: dataclasses.replace() passes it
        document: Any = _UNSET,
    ) -> None:
        doc_id = _one_of("idx", idx, "id", id)
        text = _one_of("content", content, "document", document)
        try:
            hash(doc_id)
        except TypeError as exc:
            raise InvalidArgument(
                f"BaseSearchResult idx must be hashable (a str id), got {type(doc_id).__name__}."
            ) from exc
        if not isinstance(text, str):
            raise InvalidArgument(
                f"BaseSearchResult content must be str, got {type(text).__name__}."
            )
        if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
            raise InvalidArgument(f"BaseSearchResult score must be a number, got {score!r}.")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidArgument(
                f"BaseSearchResult metadata must be a dict or None, got {type(metadata).__name__}."
            )
        object.__setattr__(self, "id", doc_id)
        object.__setattr__(self, "document", text)
        object.__setattr__(self, "score", float(score))
        object.__setattr__(self, "metadata", {} if metadata is None else dict(metadata))

    def __setattr__(self, name: str, value: Any) -> None:
        # Frozen like every SearchHit. Raised here because the dataclass' own check does not
        # cover attributes outside the fields for a subclass (it fails with a TypeError).
        raise FrozenInstanceError(f"cannot assign to field {name!r}: search results are frozen")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}: search results are frozen")

    def model_copy(
        self, *, update: Mapping[str, Any] | None = None, deep: bool = False
    ) -> BaseSearchResult[ID]:
        """A copy with ``update`` applied (keys by either name: ``score``, ``idx``, ``content``)."""
        # Every copy gets its own metadata dict, so ``deep`` needs no extra work.
        changes = {_OLD_NAMES.get(key, key): value for key, value in (update or {}).items()}
        return replace(self, **changes)

    def model_dump(self) -> dict[str, Any]:
        """The original's fields: ``{"idx": ..., "content": ..., "score": ...}``."""
        return {"idx": self.id, "content": self.document, "score": self.score}


def _one_of(old: str, old_value: Any, new: str, new_value: Any) -> Any:
    if old_value is _UNSET and new_value is _UNSET:
        raise InvalidArgument(f"BaseSearchResult needs {old}= (or {new}=).")
    if old_value is not _UNSET and new_value is not _UNSET:
        raise InvalidArgument(f"BaseSearchResult got both {old}= and {new}=; pass one of them.")
    return new_value if old_value is _UNSET else old_value
