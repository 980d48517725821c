"""`Score`: a metric's value with text feedback, and the check every metric result goes through."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from ..errors import MetricResultError

__all__ = ["Score", "as_score"]


@dataclass(frozen=True, slots=True)
class Score:
    """What a metric may return instead of a bare number: `value`, a grade from 0 (wrong) to 1
    (right), plus `feedback`, the text a reflective optimizer learns from ("expected 'Oslo',
    got 'Bergen'"). `as_score` refuses a value outside [0, 1]."""

    value: float
    feedback: str | None = ""
    """None means no feedback, the same as "" (`Score(1.0, None)` for a success with nothing
    to say); it is stored as ""."""

    def __post_init__(self) -> None:
        if not isinstance(self.value, numbers.Real) or not math.isfinite(float(self.value)):
            raise MetricResultError(f"Score.value must be a finite number, got {self.value!r}.")
        if self.feedback is None:
            object.__setattr__(self, "feedback", "")
        elif not isinstance(self.feedback, str):
            raise MetricResultError(
                f"Score.feedback must be a str or None (no feedback), got "
                f"{type(self.feedback).__name__}."
            )
        object.__setattr__(self, "value", float(self.value))


def as_score(result: Any, metric: Any) -> Score:
    """A metric's result as a `Score`. A score is a grade between 0 (wrong) and 1 (right),
    partial credit in between: reports average them, and optimizers treat 1 as nothing left to
    improve and show the teacher what scored below it. Anything else (a value outside [0, 1],
    a number that is not finite, another type) raises `MetricResultError` naming the metric."""
    if isinstance(result, Score):
        score = result
    elif isinstance(result, numbers.Real) and math.isfinite(float(result)):
        score = Score(float(result))
    else:
        if isinstance(result, numbers.Real):
            problem = f"the number {result!r}, which is not finite"
        else:
            problem = f"{type(result).__name__} {result!r:.80}"
        raise MetricResultError(
            f"The metric {_name(metric)} returned {problem}; a metric must return a finite "
            "number or a Score(value, feedback). The evaluation stopped at this first result."
        )
    if not 0.0 <= score.value <= 1.0:
        raise MetricResultError(
            f"The metric {_name(metric)} returned the score {score.value!r}; a score is "
            "between 0 and 1 (0 wrong, 1 right, partial credit in between): scale it, e.g. "
            "points / max_points. The evaluation stopped at this first result."
        )
    return score


def _name(metric: Any) -> str:
    return getattr(metric, "__qualname__", None) or type(metric).__name__
