"""The checks of counts and amounts that configure a limit, a size or a price.

A limit that NaN, a string or a fraction slips past is no limit at all (`NaN < 1` is False, so a
NaN budget would never trip), so every such argument goes through one of these when it is
given, never when it is first used: `positive_int` for counts (tokens, calls, batch sizes),
`non_negative_int` for counts where 0 means none or off, `finite_number` for amounts (costs,
prices). They refuse `bool` (an `int` to Python, never meant as a count) and accept other
numeric types (numpy's among them), returning a plain `int` or `float`. A check raises
`InvalidArgument` unless the caller names a more specific error (``error=``).
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

from .errors import InvalidArgument, PromptimusError

__all__ = ["finite_number", "non_negative_int", "positive_int"]


def positive_int(value: Any, name: str, *, error: type[PromptimusError] = InvalidArgument) -> int:
    """`value` as an `int` >= 1; `error` naming `name` for anything else (floats included, even
    `100.0`: a count is whole)."""
    return _whole_number(value, name, 1, error)


def non_negative_int(
    value: Any, name: str, *, error: type[PromptimusError] = InvalidArgument
) -> int:
    """`value` as an `int` >= 0; `error` naming `name` for anything else."""
    return _whole_number(value, name, 0, error)


def _whole_number(value: Any, name: str, minimum: int, error: type[PromptimusError]) -> int:
    if not isinstance(value, bool) and isinstance(value, numbers.Integral):
        number = operator.index(value)
        if number >= minimum:
            return number
    raise error(f"{name} must be an int >= {minimum}, got {value!r}.")


def finite_number(value: Any, name: str, *, positive: bool = False) -> float:
    """`value` as a finite `float` >= 0 (> 0 with `positive`); `InvalidArgument` naming `name`
    for NaN, infinities, strings and `bool`."""
    if not isinstance(value, bool) and isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number) and (number > 0 if positive else number >= 0):
            return number
    bound = "> 0" if positive else ">= 0"
    raise InvalidArgument(f"{name} must be a finite number {bound}, got {value!r}.")
