"""Rules that choose one candidate by several objectives: `Weighted` and `BestUnder`.

    result.pick(Weighted({"score": 1.0, "cost": 50.0}))   # score - 50 * cost, the highest
    result.pick(BestUnder("score", cost=0.01))             # best score at most 0.01 an example
    fit(..., select=BestUnder("score", cost=0.01))         # what training keeps, as it goes

A rule sees each candidate's objective values and their directions ("higher" or "lower"
better) and gives a key: the larger key is the better candidate; on equal keys the earlier
candidate stays.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidArgument, InvalidObjective, UnknownObjective

__all__ = ["BestUnder", "InOrder", "SelectionRule", "Weighted", "check_rule"]


@runtime_checkable
class SelectionRule(Protocol):
    def check(self, directions: Mapping[str, str]) -> None:
        """Raise `UnknownObjective` for a name the run did not declare."""
        ...

    def fits(self, values: Mapping[str, float], directions: Mapping[str, str]) -> bool: ...

    def key(
        self, values: Mapping[str, float], directions: Mapping[str, str]
    ) -> tuple[float, ...]: ...


def directed(value: float, better: str) -> float:
    """`value` turned so that larger is better."""
    return value if better == "higher" else -value


def _amount(value: Any, what: str) -> float:
    if not isinstance(value, bool) and isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number) and number >= 0:
            return number
    raise InvalidObjective(f"{what} must be a finite number >= 0, got {value!r}.")


def _known(names: list[str], directions: Mapping[str, str], rule: object) -> None:
    unknown = [name for name in names if name not in directions]
    if unknown:
        raise UnknownObjective(
            f"{rule!r} names {', '.join(repr(n) for n in unknown)}, which this training run "
            f"did not declare; its objectives: {', '.join(directions)}."
        )


class Weighted:
    """The highest weighted sum. A weight is what one unit of its objective is worth; a
    lower-better objective (cost, latency) counts against: `Weighted({"score": 1, "cost": 50})`
    ranks by `score - 50 * cost`. Weights are finite and >= 0, at least one above 0."""

    def __init__(self, weights: Mapping[str, float]) -> None:
        if not isinstance(weights, Mapping) or not weights:
            raise InvalidObjective(
                "Weighted needs a dict {objective: weight}, at least one weight above 0, got "
                f"{weights!r:.60}."
            )
        self.weights = {
            str(name): _amount(weight, f"Weighted's weight of {name!r}")
            for name, weight in weights.items()
        }
        if not any(self.weights.values()):
            raise InvalidObjective("Weighted needs at least one weight above 0; all are 0.")

    def check(self, directions: Mapping[str, str]) -> None:
        _known(list(self.weights), directions, self)

    def fits(self, values: Mapping[str, float], directions: Mapping[str, str]) -> bool:
        return True

    def key(self, values: Mapping[str, float], directions: Mapping[str, str]) -> tuple[float, ...]:
        return (sum(w * directed(values[n], directions[n]) for n, w in self.weights.items()),)

    def __repr__(self) -> str:
        return f"Weighted({self.weights!r})"


class BestUnder:
    """The best `target` among candidates within `bounds`, each in its objective's own
    direction: at most the bound for a lower-better objective (`cost=0.01`), at least for a
    higher-better one (`score=0.8`). During a fit, while no candidate is within bounds, the one
    that misses them by least is kept."""

    def __init__(self, target: str, **bounds: float) -> None:
        if not isinstance(target, str) or not target:
            raise InvalidObjective(f"BestUnder's target must be an objective name, got {target!r}.")
        if not bounds:
            raise InvalidObjective(
                f"BestUnder({target!r}) needs at least one bound, e.g. cost=0.01."
            )
        self.target = target
        self.bounds = {
            name: _amount(bound, f"BestUnder's bound {name}=") for name, bound in bounds.items()
        }

    def check(self, directions: Mapping[str, str]) -> None:
        _known([self.target, *self.bounds], directions, self)

    def _misses(self, values: Mapping[str, float], directions: Mapping[str, str]) -> float:
        """How far outside the bounds, each relative to its bound (0 within them)."""
        missed = 0.0
        for name, bound in self.bounds.items():
            over = -directed(values[name] - bound, directions[name])
            if over > 0:
                missed += over / bound if bound else over
        return missed

    def fits(self, values: Mapping[str, float], directions: Mapping[str, str]) -> bool:
        return self._misses(values, directions) == 0.0

    def key(self, values: Mapping[str, float], directions: Mapping[str, str]) -> tuple[float, ...]:
        missed = self._misses(values, directions)
        target = directed(values[self.target], directions[self.target])
        return (float(missed == 0.0), -missed, target)

    def describe(self, directions: Mapping[str, str]) -> str:
        return " and ".join(
            f"{name} {'<=' if directions.get(name) == 'lower' else '>='} {bound:g}"
            for name, bound in self.bounds.items()
        )

    def __repr__(self) -> str:
        bounds = ", ".join(f"{name}={bound:g}" for name, bound in self.bounds.items())
        return f"BestUnder({self.target!r}, {bounds})"


class InOrder:
    """What a fit with objectives keeps without `select=`: the best on the first objective,
    ties broken by the next, and so on."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def check(self, directions: Mapping[str, str]) -> None:
        _known(self.names, directions, self)

    def fits(self, values: Mapping[str, float], directions: Mapping[str, str]) -> bool:
        return True

    def key(self, values: Mapping[str, float], directions: Mapping[str, str]) -> tuple[float, ...]:
        return tuple(directed(values[n], directions[n]) for n in self.names)

    def __repr__(self) -> str:
        return f"InOrder({self.names!r})"


def check_rule(rule: Any, where: str) -> SelectionRule:
    if isinstance(rule, type) or not isinstance(rule, SelectionRule):
        raise InvalidArgument(
            f"{where} takes a rule such as Weighted({{'score': 1, 'cost': 50}}) or "
            f"BestUnder('score', cost=0.01), got {type(rule).__name__} {rule!r:.40}."
        )
    return rule
