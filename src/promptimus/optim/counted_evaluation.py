"""Evaluation that counts the module calls it makes and refuses to pass the budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

from ..core import Module
from ..dto import Usage
from ..evals import BatchOptions, CallCounter, Runner, evaluate
from .budget import Budget
from .objective_set import ObjectiveSet


class BudgetSpent(Exception):
    """Internal signal: the next evaluation would pass the budget. `fit` ends the run on it."""


@dataclass
class Evaluation:
    rows: list[Any]
    scores: list[float]
    #: what the objectives' recorders saw during the run (see `ObjectiveSet.recording`)
    recorded: dict[str, Any] = field(default_factory=dict)
    #: the tokens this run added to the count (the module's and the metric's)
    usage: Usage = field(default_factory=Usage)

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
        runner: Runner | None = None,
        objectives: ObjectiveSet | None = None,
    ) -> None:
        self.module = module
        self.objectives = objectives
        self.runner = runner
        self.budget = budget
        self.concurrency = concurrency
        self.counter = CallCounter(budget.calls)  # evals' own count; refuses, never passes
        self.counter.calls = calls
        self.usage = usage or Usage()
        self._metric = metric
        self.on_calls: Callable[[int], None] | None = None
        self.validation_batch: BatchOptions | None = None
        """How validation sets are scored through batch APIs (None: directly)."""

    @property
    def calls(self) -> int:
        return self.counter.calls

    @calls.setter
    def calls(self, value: int) -> None:
        self.counter.calls = value

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

    async def run(
        self, examples: Sequence[Any], *, module: Module | None = None, validation: bool = False
    ) -> Evaluation:
        """Evaluate `examples` on the trained module (or `module`, a copy of it holding another
        candidate's values); `validation` runs go through the batch APIs when `validation_batch`
        is set. The calls are counted before the first one is made, so evaluations
        run side by side never pass the budget together."""
        module = self.module if module is None else module
        self.ensure(len(examples))
        if self.on_calls is not None:
            self.on_calls(len(examples))
        with ExitStack() as stack:
            recorded = {}
            if self.objectives is not None:
                recorded = self.objectives.recording(module, stack)
            # a metric result that is neither a number nor a Score raises MetricResultError here
            report = await evaluate(
                module,
                list(examples),
                self._metric,
                concurrency=self.concurrency,
                progress=False,
                counter=self.counter,
                runner=self.runner,
                batch=(validation and self.validation_batch) or False,
            )
        before = self.usage
        self.add_usage(report.usage)
        self.add_usage(report.metric_usage)  # an LLMJudge's tokens count against the limit too
        rows = list(report.rows)
        spent = Usage(
            prompt_tokens=self.usage.prompt_tokens - before.prompt_tokens,
            completion_tokens=self.usage.completion_tokens - before.completion_tokens,
            total_tokens=self.usage.total_tokens - before.total_tokens,
        )
        return Evaluation(rows, [float(row.score) for row in rows], recorded, spent)

    async def objective_values(self, evaluation: Evaluation) -> dict[str, float]:
        """Every declared objective's value for `evaluation` ({} in a single-metric fit); the
        measures' own LLM calls count against the token budget."""
        if self.objectives is None:
            return {}
        values, usage = await self.objectives.values(
            evaluation.rows, evaluation.score, evaluation.recorded
        )
        self.add_usage(usage)
        return values
