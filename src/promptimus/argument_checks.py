"""The checks of counts and amounts that configure a limit or a price.

A limit that NaN, a string or a fraction slips past is no limit at all (`NaN < 1` is False, so a
NaN budget would never trip), so every such argument goes through one of these when it is
given, never when it is first used: `positive_int` for counts (tokens, calls), `finite_number`
for amounts (costs, prices). Both refuse `bool` (an `int` to Python, never meant as a count) and
accept other numeric types (numpy's among them), returning a plain `int` or `float`.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

from .errors import InvalidArgument

__all__ = ["finite_number", "positive_int"]


def positive_int(value: Any, name: str) -> int:
    """`value` as an `int` >= 1; `InvalidArgument` naming `name` for anything else (floats
    included, even `100.0`: a count is whole)."""
    if not isinstance(value, bool) and isinstance(value, numbers.Integral):
        number = operator.index(value)
        if number >= 1:
            return number
    raise InvalidArgument(f"{name} must be an int >= 1, got {value!r}.")


def finite_number(value: Any, name: str, *, positive: bool = False) -> float:
    """`value` as a finite `float` >= 0 (> 0 with `positive`); `InvalidArgument` naming `name`
    for NaN, infinities, strings and `bool`."""
    if not isinstance(value, bool) and isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number) and (number > 0 if positive else number >= 0):
            return number
    bound = "> 0" if positive else ">= 0"
    raise InvalidArgument(f"{name} must be a finite number {bound}, got {value!r}.")
