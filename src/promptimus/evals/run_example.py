"""One example's run: call the module in its own `Session`, score the output, and make the row.

Every runner calls this, in this process or on another machine, so a row means the same
wherever it was made (its usage is collected on `promptimus.observe.usage`, as everywhere)."""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from ..core import Session
from ..errors import MetricResultError
from .example import Example
from .report import EvalRow
from .score import Score, as_score
from .usage_collector import UsageTotals, collecting

Metric: TypeAlias = Callable[[Example, Any], "float | Score | Awaitable[float | Score]"]


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


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
            error = _describe(exc)
            return EvalRow(example, None, 0.0, f"the module raised {error}", error, latency, usage)
    latency = time.perf_counter() - started
    with collecting() as judged:
        try:
            score = await _score(metric, example, output)
        except MetricResultError:
            raise
        except Exception as exc:
            error = f"metric: {_describe(exc)}"
            return EvalRow(example, output, 0.0, error, error, latency, usage)
        finally:
            metric_usage.add(judged)
    return EvalRow(example, output, score.value, score.feedback, None, latency, usage)
