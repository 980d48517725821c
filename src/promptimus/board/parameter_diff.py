"""What changed between two sets of parameters: the diff `promptimus diff A B` prints and the
board shows (a fit's candidate against its parent, the best checkpoint against the start, two
checkpoint files side by side).

    changes = parameter_changes(flat_parameters(read_checkpoint(a)), ...)

Each `Change` is "removed", "added" or "changed"; a changed text carries its unified diff
lines (`---`, `+++`, `@@`, then ` `, `-`, `+` lines).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.parameters import value_digest

__all__ = ["Change", "flat_parameters", "one_line", "parameter_changes"]


@dataclass(frozen=True, slots=True)
class Change:
    """One parameter that differs: `kind`, its dotted `key`, the `old` and `new` values, and for
    two texts their unified diff `lines`."""

    kind: Literal["removed", "added", "changed"]
    key: str
    old: Any = None
    new: Any = None
    lines: list[str] = field(default_factory=list)


def flat_parameters(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every parameter of a checkpoint's module dict under its dotted key (`agent.prompt`), in
    checkpoint order."""
    flat: dict[str, Any] = {}
    for name, value in data.get("params", {}).items():
        flat[prefix + name] = value
    for name, sub in data.get("submodules", {}).items():
        flat.update(flat_parameters(sub, f"{prefix}{name}."))
    return flat


def one_line(value: Any) -> str:
    """A parameter's value as one line of JSON."""
    return json.dumps(value, ensure_ascii=False)


def parameter_changes(
    a: Mapping[str, Any], b: Mapping[str, Any], label_a: str = "a", label_b: str = "b"
) -> list[Change]:
    """The removed, added and changed parameters from `a` to `b` (flat, dotted keys), in that
    order; texts are compared line by line, labelled `label_a:key` and `label_b:key`."""
    changes = [Change("removed", key, old=a[key]) for key in a if key not in b]
    changes += [Change("added", key, new=b[key]) for key in b if key not in a]
    for key in [k for k in a if k in b and value_digest(a[k]) != value_digest(b[k])]:
        old, new = a[key], b[key]
        lines: list[str] = []
        if isinstance(old, str) and isinstance(new, str):
            lines = list(
                difflib.unified_diff(
                    old.split("\n"),
                    new.split("\n"),
                    f"{label_a}:{key}",
                    f"{label_b}:{key}",
                    lineterm="",
                )
            )
        changes.append(Change("changed", key, old=old, new=new, lines=lines))
    return changes
