"""Evaluation that counts the module calls it makes, refuses to pass the budget, and checks
what the metric returns."""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import Module
from ..dto import Usage
from ..errors import InvalidMetricResult
from .budget import Budget


class BudgetSpent(Exception):
    """Internal signal: the next evaluation would pass the budget. `fit` ends the run on it."""


@dataclass
class Evaluation:
    rows: list[Any]
    scores: list[float]

    @property
    def score(self) -> float:
        return sum(self.scores) / len(self.scores) if self.scores else 0.0

    @property
    def total(self) -> float:
        return sum(self.scores)


class CountedEvaluator:
    """Runs `promptimus.evals.evaluate` on a module; every example evaluated is one module call
    and counts against `budget`. An evaluation that would pass the budget is not started."""

    def __init__(
        self,
        module: Module,
        metric: Callable[..., Any],
        budget: Budget,
        *,
        concurrency: int = 8,
        calls: int = 0,
        usage: Usage | None = None,
    ) -> None:
        self.module = module
        self.budget = budget
        self.concurrency = concurrency
        self.calls = calls
        self.usage = usage or Usage()
        self._metric = metric
        self._bad_result: InvalidMetricResult | None = None
        self.on_calls: Callable[[int], None] | None = None

    def can_afford(self, calls: int) -> bool:
        if self.budget.max_tokens is not None and self.usage.total_tokens >= self.budget.max_tokens:
            return False
        return self.calls + calls <= self.budget.calls

    def ensure(self, calls: int) -> None:
        if not self.can_afford(calls):
            raise BudgetSpent

    def add_usage(self, usage: Any) -> None:
        """Add token counts from a `Usage` or anything with the same fields (evals' totals)."""
        if usage is None:
            return
        self.usage = self.usage + Usage(
            prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
            total_tokens=getattr(usage, "total_tokens", 0) or 0,
        )

    async def _checked_metric(self, example: Any, output: Any) -> Any:
        result = self._metric(example, output)
        if inspect.isawaitable(result):
            result = await result
        from ..evals import Score

        if isinstance(result, Score) or (
            isinstance(result, numbers.Real) and not isinstance(result, bool)
        ):
            return result
        if isinstance(result, bool):
            return float(result)
        if self._bad_result is None:
            name = getattr(self._metric, "__name__", type(self._metric).__name__)
            self._bad_result = InvalidMetricResult(
                f"metric {name!r} returned {type(result).__name__} ({result!r:.60}); a metric "
                "must return a number or a promptimus.evals.Score(value, feedback)."
            )
        return 0.0

    async def run(self, examples: Sequence[Any]) -> Evaluation:
        from ..evals import evaluate

        self.ensure(len(examples))
        self.calls += len(examples)
        if self.on_calls is not None:
            self.on_calls(len(examples))
        report = await evaluate(
            self.module,
            list(examples),
            self._checked_metric,
            concurrency=self.concurrency,
            progress=False,
        )
        if self._bad_result is not None:
            raise self._bad_result
        self.add_usage(getattr(report, "usage", None))
        rows = list(report.rows)
        return Evaluation(rows, [float(row.score) for row in rows])
