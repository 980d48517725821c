"""The run of examples: call the module in a `Session` of its own, score the output, make the row.

Every runner calls `run_examples`, in this process or in a worker on another machine, so a row
means the same wherever it was made (its usage is collected on `promptimus.observe.usage`, as
everywhere)."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

from ..core import Session
from ..errors import MetricResultError
from ..exception_text import one_line
from .example import Example
from .report import EvalRow
from .run_trace import recording
from .score import Score, as_score
from .usage_collector import UsageTotals, collecting

Metric: TypeAlias = Callable[[Example, Any], "float | Score | Awaitable[float | Score]"]


async def _score(metric: Metric, example: Example, output: Any) -> Score:
    result = metric(example, output)
    if inspect.isawaitable(result):
        result = await result
    return as_score(result, metric)


__all__ = ["Metric", "run_example", "run_examples"]


async def run_example(
    module: Any, metric: Metric, example: Example, index: int, metric_usage: UsageTotals
) -> EvalRow:
    """`example`'s row (the module's or the metric's exception becomes the row's error); the
    metric's own usage is added to `metric_usage`. `MetricResultError` is raised, not kept."""
    # Each example gets a fresh Session (its own memories) in its own task (its own context).
    output: Any = None
    started = time.perf_counter()
    with collecting() as usage, recording() as trace:
        try:
            async with Session(f"eval-{index}"):
                output = module(**example.inputs)
                if inspect.isawaitable(output):
                    output = await output
        except Exception as exc:
            latency = time.perf_counter() - started
            error = trace.redact(one_line(exc))  # an error may quote a provider's key
            failed = f"the module raised {error}"
            return EvalRow(example, None, 0.0, failed, error, latency, usage, trace)
    latency = time.perf_counter() - started
    with collecting() as judged:
        try:
            score = await _score(metric, example, output)
        except MetricResultError:
            raise
        except Exception as exc:
            error = f"metric: {one_line(exc)}"
            return EvalRow(example, output, 0.0, error, error, latency, usage, trace)
        finally:
            metric_usage.add(judged)
    # Score stores a None feedback as ""; `or` tells the checker so
    feedback = score.feedback or ""
    return EvalRow(example, output, score.value, feedback, None, latency, usage, trace)


async def run_examples(
    module: Any,
    metric: Metric,
    indexed: Sequence[tuple[int, Example]],
    concurrency: int,
    on_row: Callable[[EvalRow], None] | None = None,
) -> tuple[list[EvalRow], UsageTotals]:
    """The rows of `indexed` (`(dataset index, example)` pairs), in its order, and the metric's
    usage: at most `concurrency` examples at once, each in a task of its own (its own context).
    `on_row` is told of each row as it is made."""
    rows: list[EvalRow | None] = [None] * len(indexed)
    metric_usage = UsageTotals()
    pending = iter(range(len(indexed)))

    async def worker() -> None:
        for position in pending:  # shared iterator: each example is taken by exactly one worker
            index, example = indexed[position]
            row = await asyncio.create_task(
                run_example(module, metric, example, index, metric_usage)
            )
            rows[position] = row
            if on_row is not None:
                on_row(row)

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(indexed)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return [row for row in rows if row is not None], metric_usage
