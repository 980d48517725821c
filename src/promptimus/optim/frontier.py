"""The frontier over objectives: the candidates no other candidate beats on every objective.

One candidate dominates another when it is at least as good on every objective and better on
one; the frontier keeps those no candidate dominates (equal ones all stay). Every trade-off
worth choosing is on it: the best score under a cost cap, the best weighted sum."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .selection import directed

__all__ = ["FrontierPoint", "non_dominated"]


@dataclass(frozen=True)
class FrontierPoint:
    """A candidate on the frontier: its number in the history, its objective values (by
    name), the parameter values it sets (`{path: value}`, as `TrainResult.best_values`), and
    whether it is the one the fit kept (`chosen`)."""

    candidate: int
    objectives: dict[str, float]
    values: dict[str, Any] = field(default_factory=dict)
    chosen: bool = False

    def apply(self, module: Any) -> None:
        """Set these values on `module`'s parameters (the module the fit trained)."""
        params = dict(module.named_parameters())
        for path, value in self.values.items():
            params[path].value = value


def _dominates(
    a: Mapping[str, float], b: Mapping[str, float], directions: Mapping[str, str]
) -> bool:
    pairs = [(directed(a[n], d), directed(b[n], d)) for n, d in directions.items()]
    return all(x >= y for x, y in pairs) and any(x > y for x, y in pairs)


def non_dominated(
    points: Mapping[int, Mapping[str, float]], directions: Mapping[str, str]
) -> list[int]:
    """The ids of `points` no other point dominates, in id order."""
    return [
        cid
        for cid in sorted(points)
        if not any(
            _dominates(points[other], points[cid], directions) for other in points if other != cid
        )
    ]
