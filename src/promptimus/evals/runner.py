"""Runners: where `evaluate` (and so `fit`) runs the examples.

A runner takes an `EvalJob` — the module, the examples, the metric, how many examples at once —
and gives back the `EvalReport`, its rows in dataset order. `InProcessRunner` (the default) runs
them as tasks on this event loop; `promptimus.distributed.RayRunner` runs them on Ray workers.
Whatever the runner, each row is made by `run_examples`, so reports agree.

`prepare` comes first and does everything that may fail before an example is spent (start
workers, ship the module, check it can travel); only then does `evaluate` count the calls
against a `CallCounter` and call `run`, which tells `on_row` of each row as it arrives (the
progress bar).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidArgument
from .example import Example
from .report import EvalReport, EvalRow
from .run_example import Metric, run_examples

__all__ = ["EvalJob", "InProcessRunner", "Runner", "check_runner"]


@dataclass(frozen=True)
class EvalJob:
    """One evaluation as `evaluate` hands it to a runner (its arguments already checked)."""

    module: Any
    examples: list[Example]
    metric: Metric
    concurrency: int


@runtime_checkable
class Runner(Protocol):
    async def prepare(self, job: EvalJob) -> None:
        """Get ready to run `job`; raise here (a named `PromptimusError`) anything that would
        stop it, since no example has been run or counted yet."""
        ...

    async def run(self, job: EvalJob, on_row: Callable[[EvalRow], None]) -> EvalReport:
        """Run every example once; rows in dataset order; `on_row(row)` as each one is made."""
        ...


class InProcessRunner:
    """Runs the examples as tasks on the running event loop, at most `job.concurrency` at once:
    what `evaluate` has always done."""

    async def prepare(self, job: EvalJob) -> None:
        return None

    async def run(self, job: EvalJob, on_row: Callable[[EvalRow], None]) -> EvalReport:
        indexed = list(enumerate(job.examples))
        rows, metric_usage = await run_examples(
            job.module, job.metric, indexed, job.concurrency, on_row
        )
        return EvalReport(rows, metric_usage)

    def __repr__(self) -> str:
        return "InProcessRunner()"


def check_runner(runner: Any) -> Runner:
    """`runner`, or `InProcessRunner()` for None; `InvalidArgument` for anything else."""
    if runner is None:
        return InProcessRunner()
    if isinstance(runner, type):
        raise InvalidArgument(
            f"runner must be a runner instance; got the class {runner.__name__}: write "
            f"{runner.__name__}(...)."
        )
    if not isinstance(runner, Runner):
        raise InvalidArgument(
            f"runner must be a runner such as promptimus.distributed.RayRunner(...), got "
            f"{type(runner).__name__} (it has no async prepare(job) and run(job, on_row))."
        )
    return runner
