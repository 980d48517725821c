"""The values a parameter (and so a checkpoint) can hold: str, 64-bit int, float, bool and lists
of these, nested at most `MAX_VALUE_DEPTH` deep; `UNSET` for a parameter that has none yet.
Plain data helpers shared by the core (`Parameter`) and the checkpoint reader, writer and planner:
a check, a copy that shares no list, and a content digest."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from ..errors import InvalidParameterValue
from .limits import MAX_VALUE_DEPTH

__all__ = ["INT64_MAX", "INT64_MIN", "UNSET", "check_value", "copy_value", "value_digest"]


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"

    def __reduce__(self) -> str:
        return "UNSET"  # unpickles as the module's singleton, so `is UNSET` keeps working


UNSET: Any = _Unset()

# TOML integers are 64-bit: other parsers (and TOML-based tools) reject a file holding more.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def copy_value(value: Any) -> Any:
    """A copy of a parameter value that shares no list with it (scalars are immutable)."""
    if isinstance(value, list):
        return [copy_value(item) for item in value]
    return value


def check_value(value: Any, where: str = "a Parameter") -> Any:
    """Return `value` if a checkpoint can hold it exactly, else raise `InvalidParameterValue`.

    Checkpoints hold str, 64-bit int, float, bool and lists of these nested at most
    `MAX_VALUE_DEPTH` deep. Strings must be encodable as UTF-8 (no lone surrogates), so a value
    that is accepted here always saves, and every TOML parser reads it back.
    """
    if type(value) is str and value.isascii():  # the common case, checked at once
        return value
    todo: list[tuple[Any, int]] = [(value, 0)]  # (item, lists around it); no recursion
    while todo:
        item, depth = todo.pop()
        if isinstance(item, bool | float):
            continue
        if isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                raise InvalidParameterValue(
                    f"{where} got an integer outside the 64-bit range TOML allows "
                    f"({item.bit_length()} bits); other TOML readers would reject the file. "
                    "Store it as a string (or as a float, if an approximation will do)."
                )
            continue
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidParameterValue(
                    f"{where} got a string with an unpaired surrogate at index {exc.start}; "
                    "checkpoints are UTF-8, so remove or replace that character."
                ) from None
            continue
        if isinstance(item, list):
            if depth + 1 > MAX_VALUE_DEPTH:
                raise InvalidParameterValue(
                    f"{where} got lists nested more than {MAX_VALUE_DEPTH} deep "
                    "(promptimus.core.MAX_VALUE_DEPTH); flatten the value or store it as text."
                )
            todo.extend((child, depth + 1) for child in item)
            continue
        raise InvalidParameterValue(
            f"{where} cannot hold a value of type {type(item).__name__}; use str, int, float, "
            "bool or a list of these (convert tuples to lists, serialise objects to text "
            "yourself)."
        )
    return value


def _canonical(value: Any) -> Any:
    # Tagged so that 1, 1.0, True and "1" never share a digest.
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, int):
        return ["i", str(int(value))]  # int(): a subclass may define its own __str__
    if isinstance(value, float):
        return ["f", value.hex() if math.isfinite(value) else repr(float(value))]
    if isinstance(value, str):
        return ["s", value]
    return ["l", [_canonical(v) for v in value]]


def value_digest(value: Any) -> str:
    """A stable content hash of a parameter value (or of `UNSET`)."""
    payload = ["unset"] if value is UNSET else _canonical(value)
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
