"""The body of a Ray worker (an actor): it takes the module once, then runs batches of examples.

A worker keeps its module between batches and between evaluations; the parameter values under
test arrive as a state dict, loaded only when they change. Each batch runs through
`promptimus.evals.run_example.run_examples`, the code the in-process runner uses, so its rows
(outputs, scores, feedback, errors, usage) are what an in-process evaluation would make.
"""

from __future__ import annotations

import inspect
import os
import pickle
import socket
from dataclasses import dataclass, field
from typing import Any

from ..core import Module
from ..errors import MetricResultError
from ..evals.example import Example
from ..evals.report import EvalRow
from ..evals.run_example import run_examples
from ..evals.usage_collector import UsageTotals
from ..exception_text import one_line

__all__ = ["BatchResult", "EvalWorker"]


@dataclass
class BatchResult:
    """The rows of one batch in its order, the metric's usage, and the message of a
    `MetricResultError` that stopped it (then `rows` is empty)."""

    rows: list[EvalRow] = field(default_factory=list)
    metric_usage: UsageTotals = field(default_factory=UsageTotals)
    metric_error: str | None = None


async def _call(fn: Any, value: Any) -> Any:
    result = fn(value)
    if inspect.isawaitable(result):
        result = await result
    return value if result is None else result


class EvalWorker:
    """Made a Ray actor by `RayRunner` (`ray.remote(...)(EvalWorker)`); usable as is in tests."""

    def __init__(self) -> None:
        self._module: Any = None
        self._metric: Any = None
        self._version: int | None = None

    def where(self) -> str:
        """The host and process, for messages about this worker."""
        return f"{socket.gethostname()} (pid {os.getpid()})"

    async def install(
        self,
        module: bytes,
        setup: bytes | None,
        metric: bytes,
        metric_setup: bytes | None,
    ) -> str | None:
        """Take the module and the metric (pickled), run the setups on them; None when done,
        else what failed, as `"<step>: <Type>: <message>"` (the worker then holds nothing)."""
        self._module = self._metric = self._version = None
        step = "unpickling the module"
        try:
            taken = pickle.loads(module)
            step = "unpickling the metric"
            scorer = pickle.loads(metric)
            if setup is not None:
                step = "unpickling setup"
                fn = pickle.loads(setup)
                step = "setup(module)"
                taken = await _call(fn, taken)
            if metric_setup is not None:
                step = "unpickling metric_setup"
                fn = pickle.loads(metric_setup)
                step = "metric_setup(metric)"
                scorer = await _call(fn, scorer)
        except Exception as exc:
            return f"{step} on {self.where()}: {one_line(exc)}"
        if not isinstance(taken, Module):
            got = type(taken).__name__
            return f"setup returned a {got} on {self.where()}; return the module (or None)"
        if not callable(scorer):
            got = type(scorer).__name__
            return f"metric_setup returned a {got} on {self.where()}; return the metric (or None)"
        self._module, self._metric = taken, scorer
        return None

    async def run_batch(
        self,
        version: int,
        values: list[Any],
        indexed: list[tuple[int, Example]],
        concurrency: int,
    ) -> BatchResult:
        """Run `indexed` (`(dataset index, example)` pairs) with the parameter values of
        evaluation `version`: `values[0]`, a state dict or a Ray reference to one, fetched and
        loaded at the first batch of each evaluation only."""
        if self._module is None:
            raise RuntimeError("this worker holds no module: install() did not succeed")
        if version != self._version:
            state = values[0]
            if inspect.isawaitable(state):
                state = await state
            self._module.load_state_dict(state)
            self._version = version
        try:
            rows, metric_usage = await run_examples(
                self._module, self._metric, indexed, concurrency
            )
        except MetricResultError as exc:
            return BatchResult(metric_error=str(exc))
        return BatchResult(rows, metric_usage)
