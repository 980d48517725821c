"""Finding a number JSON cannot hold (NaN, Infinity) in a tool call's validated arguments.

JSON has no NaN or Infinity, yet Python's and pydantic's JSON readers take a bare `NaN`,
`Infinity` and `1e999` (as inf), and lax validation turns the text `"NaN"` into a float: a
bound check such as `amount > 100` is then False for every bound, and the tool runs with nan. A
model that sends one sent invalid arguments, so they are refused as such.
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal
from typing import Any

from pydantic import BaseModel

__all__ = ["holds_non_finite"]

_PLAIN = frozenset({str, int, bool, type(None), bytes})


def holds_non_finite(value: Any) -> bool:
    """Whether `value` (a validated argument: numbers, texts, lists, dicts, pydantic models,
    dataclasses) holds a NaN or an infinity anywhere."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, Decimal):
        return not value.is_finite()
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    elif isinstance(value, BaseModel):
        items = value.__dict__.values()
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = (getattr(value, field.name) for field in dataclasses.fields(value))
    else:
        return False
    return any(type(item) not in _PLAIN and holds_non_finite(item) for item in items)
