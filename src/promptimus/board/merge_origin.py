"""Where each parameter of a merge came from: its first parent, its second, or neither.

`promptimus diff A MERGED B` prints it for three checkpoints and the board's Training page
shows it for a fit's merges (their history entries name the parameter each parent gave).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..core.parameters import value_digest

__all__ = ["Origin", "merge_origins"]

Source = Literal["first", "second", "neither", "added", "dropped"]


@dataclass(frozen=True, slots=True)
class Origin:
    """Parameter `key` of the merge: `source` says which parent holds its `value` ("neither":
    both hold another; "added": neither parent has it; "dropped": the merge lacks it);
    `other` is the value of the parent it did not come from (the first's for "neither")."""

    key: str
    source: Source
    value: Any = None
    other: Any = None


def _same(a: Any, b: Any) -> bool:
    return value_digest(a) == value_digest(b)


def merge_origins(
    first: Mapping[str, Any], merged: Mapping[str, Any], second: Mapping[str, Any]
) -> list[Origin]:
    """The parameters (flat, dotted keys) on which the two parents differ or the merge holds
    what neither does, in the merge's order, then those the merge dropped. A parameter both
    parents hold alike, and the merge too, is not listed."""
    origins: list[Origin] = []
    for key, value in merged.items():
        in_first, in_second = key in first, key in second
        if not in_first and not in_second:
            origins.append(Origin(key, "added", value))
            continue
        from_first = in_first and _same(value, first[key])
        from_second = in_second and _same(value, second[key])
        if from_first and from_second:
            continue
        if from_first:
            origins.append(Origin(key, "first", value, second.get(key)))
        elif from_second:
            origins.append(Origin(key, "second", value, first.get(key)))
        else:
            origins.append(Origin(key, "neither", value, first.get(key, second.get(key))))
    for key in [*first, *(k for k in second if k not in first)]:
        if key not in merged:
            origins.append(Origin(key, "dropped", other=first.get(key, second.get(key))))
    return origins
