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
    """What a metric may return instead of a bare number: `value` plus `feedback`, the text a
    reflective optimizer learns from ("expected 'Oslo', got 'Bergen'")."""

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
    """A metric's result as a `Score`; anything but a finite number or a `Score` raises
    `MetricResultError` naming the metric."""
    if isinstance(result, Score):
        return result
    if isinstance(result, numbers.Real) and math.isfinite(float(result)):
        return Score(float(result))
    name = getattr(metric, "__qualname__", None) or type(metric).__name__
    if isinstance(result, numbers.Real):
        problem = f"the number {result!r}, which is not finite"
    else:
        problem = f"{type(result).__name__} {result!r:.80}"
    raise MetricResultError(
        f"The metric {name} returned {problem}; a metric must return a finite number or a "
        "Score(value, feedback). The evaluation stopped at this first result."
    )
