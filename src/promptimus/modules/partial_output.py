"""Partial objects of an output model, read from JSON that is still streaming in.

`PartialReader(Model)` reads the JSON received so far into `partial_model(Model)`, a model whose
fields are all optional (nested models likewise). It reads leniently: an open string, object or
list is closed where it stands; a number or a `true`/`false`/`null` still being written is left
out, since `3` may yet become `31`. It keeps, in the order they arrived, the fields that
validate: one that does not validate yet is left out until it does. A snapshot is handed out
only when it differs from the last one, so a UI redraws only on news. Fed piece by piece
(`add`), it reads a long reply only when a fair share of it is new, so reading a whole stream
costs time in proportion to its length, not to its length squared.
"""

from __future__ import annotations

import functools
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError, create_model
from pydantic_core import from_json

__all__ = ["PartialReader", "partial_model"]

_GROWING = frozenset("0123456789.eE+-truefalsn")
"""Characters a JSON number or literal is made of: one ending the text may still grow."""

_READ_EVERY_PIECE = 2048
"""Up to this length a reply is read at each piece; past it, once a 32nd of it is new."""


def _loosened(annotation: Any) -> Any:
    """`annotation` with every model in it (directly, in a list, in an optional) made partial."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return partial_model(annotation)
    origin = get_origin(annotation)
    if origin in (list, Union) or str(origin) == "<class 'types.UnionType'>":
        args = tuple(_loosened(arg) for arg in get_args(annotation))
        if origin is list:
            return list[args[0]]  # type: ignore[valid-type]
        return Union[args]  # noqa: UP007 - built from a tuple of arguments
    return annotation


@functools.cache
def partial_model(model: type[BaseModel]) -> type[BaseModel]:
    """`model` with every field optional (None when absent), nested models partial too."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = _loosened(info.annotation)
        fields[name] = (annotation | None, None) if annotation is not None else (Any, None)
    partial: type[BaseModel] = create_model(f"Partial{model.__name__}", **fields)
    return partial


def _json_start(text: str) -> int | None:
    """Where the JSON object starts (after a code fence or stray text), None if not yet."""
    position = text.find("{")
    return None if position < 0 else position


class PartialReader:
    """Reads streaming JSON into snapshots of `partial_model(model)` (see the module docstring)."""

    __slots__ = (
        "_escaped",
        "_in_string",
        "_last",
        "_pieces",
        "_read",
        "_received",
        "_scanned",
        "model",
        "partial",
    )

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model
        self.partial = partial_model(model)
        self._last: dict[str, Any] | None = None
        self._scanned = 0
        self._in_string = False
        self._escaped = False
        self._pieces: list[str] = []
        self._received = 0
        self._read = 0

    def add(self, piece: str) -> BaseModel | None:
        """`feed` for a stream: `piece` joins the reply, which is read (and a snapshot made)
        while it is short, and past that each time a 32nd of it is new: a reply of n pieces is
        then read O(log n) times instead of n, so a long one does not stall the event loop."""
        self._pieces.append(piece)
        self._received += len(piece)
        fresh = self._received - self._read
        if self._received > _READ_EVERY_PIECE and fresh * 32 < self._received:
            return None
        self._read = self._received
        return self.feed("".join(self._pieces))

    def _scan(self, text: str) -> None:
        """Follow whether `text` ends inside a string, reading only what is new since the last
        call (the reply only grows), so a whole stream is read once."""
        in_string, escaped = self._in_string, self._escaped
        for char in text[self._scanned :]:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = in_string
            elif char == '"':
                in_string = not in_string
        self._scanned, self._in_string, self._escaped = len(text), in_string, escaped

    def _settled(self, text: str) -> str:
        """`text` without a trailing number or literal that may still grow."""
        if self._in_string:
            return text
        end = len(text)
        while end and text[end - 1] in _GROWING:
            end -= 1
        return text[:end]

    def feed(self, text: str) -> BaseModel | None:
        """The snapshot for the reply text so far, or None when nothing new validates."""
        start = _json_start(text)
        if start is None:
            return None
        self._scan(text)
        try:
            data = from_json(self._settled(text)[start:], allow_partial="trailing-strings")
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        snapshot = self._validated(data)
        if snapshot is None:
            return None
        shown = snapshot.model_dump(exclude_unset=True)
        if shown == self._last:
            return None
        self._last = shown
        return snapshot

    def _validated(self, data: dict[str, Any]) -> BaseModel | None:
        """The partial instance of the fields of `data` that validate, in their order."""
        known = {key: value for key, value in data.items() if key in self.partial.model_fields}
        while known:
            try:
                return self.partial.model_validate(known)
            except ValidationError as exc:
                bad = {error["loc"][0] for error in exc.errors() if error["loc"]}
                if not bad & known.keys():
                    return None
                known = {key: value for key, value in known.items() if key not in bad}
        return None
