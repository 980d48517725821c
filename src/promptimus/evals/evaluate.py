"""`evaluate`: run a module over examples, score every output, and report."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

from ..argument_checks import positive_int
from ..core import Session
from ..errors import EmptyDataset, InvalidArgument, MetricResultError
from ..exception_text import one_line
from .call_counter import CallCounter
from .example import Example, example_list
from .progress import open_progress
from .report import EvalReport, EvalRow
from .score import Score, as_score
from .usage_collector import UsageTotals, collecting

__all__ = ["Metric", "evaluate"]

Metric: TypeAlias = Callable[[Example, Any], "float | Score | Awaitable[float | Score]"]


async def _score(metric: Metric, example: Example, output: Any) -> Score:
    result = metric(example, output)
    if inspect.isawaitable(result):
        result = await result
    return as_score(result, metric)


async def _run_one(
    module: Any, metric: Metric, example: Example, index: int, metric_usage: UsageTotals
) -> EvalRow:
    # Each example gets a fresh Session (its own memories) in its own task (its own context).
    output: Any = None
    started = time.perf_counter()
    with collecting() as usage:
        try:
            async with Session(f"eval-{index}"):
                output = module(**example.inputs)
                if inspect.isawaitable(output):
                    output = await output
        except Exception as exc:
            latency = time.perf_counter() - started
            error = one_line(exc)
            return EvalRow(example, None, 0.0, f"the module raised {error}", error, latency, usage)
    latency = time.perf_counter() - started
    with collecting() as judged:
        try:
            score = await _score(metric, example, output)
        except MetricResultError:
            raise
        except Exception as exc:
            error = f"metric: {one_line(exc)}"
            return EvalRow(example, output, 0.0, error, error, latency, usage)
        finally:
            metric_usage.add(judged)
    return EvalRow(example, output, score.value, score.feedback, None, latency, usage)


async def evaluate(
    module: Callable[..., Any],
    dataset: Sequence[Example],
    metric: Metric,
    *,
    concurrency: int = 8,
    progress: bool = True,
    counter: CallCounter | None = None,
) -> EvalReport:
    """Call `await module(**example.inputs)` for every example — at most `concurrency` at once,
    each in its own `Session` — score each output with `metric(example, output)` (sync or async,
    a number or a `Score`), and return an `EvalReport` whose rows follow the dataset's order.

    An exception from the module or the metric becomes that example's row (score 0, `error`)
    and the run goes on; a metric result that is not a finite number or a `Score` stops the run
    with `MetricResultError`. `dataset` may be a `Dataset` or any list of `Example`s (an
    optimizer's minibatch). With `counter`, the run reserves one call per example up front and
    raises `CallBudgetExceeded` before calling anything when they do not fit its `max_calls`.
    `progress` shows a tqdm bar on a terminal or in a notebook (see `promptimus.evals.progress`).
    """
    examples = example_list(dataset, "evaluate's dataset")
    if not examples:
        raise EmptyDataset("evaluate got no examples; give it a dataset with at least one.")
    if not callable(metric):
        raise InvalidArgument(
            f"metric must be callable as metric(example, output), got {metric!r}."
        )
    concurrency = positive_int(concurrency, "concurrency")
    if counter is not None:
        counter.reserve(len(examples))

    rows: list[EvalRow | None] = [None] * len(examples)
    metric_usage = UsageTotals()
    pending = iter(range(len(examples)))
    bar = open_progress(len(examples), progress)
    total, done = 0.0, 0

    async def worker() -> None:
        nonlocal total, done
        for index in pending:  # shared iterator: each index is taken by exactly one worker
            row = await asyncio.create_task(
                _run_one(module, metric, examples[index], index, metric_usage)
            )
            rows[index] = row
            total += row.score
            done += 1
            bar.update(1)
            bar.set_postfix_str(f"score={total / done:.3f}")

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(examples)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        bar.close()
    return EvalReport([row for row in rows if row is not None], metric_usage)
