"""Objectives: what `fit(objectives=...)` measures of every candidate it validates.

    fit(agent, trainset, objectives={"score": exact_match, "cost": Cost(PRICES),
                                     "latency": "latency"}, optimizer=..., budget=200)

An `Objective` is a measure and a direction (`better="higher"` or `"lower"`). A measure is a
metric, `fn(example, output) -> number | Score` (sync or async), averaged over the examples;
a plain metric in the dict is a higher-better `Objective`. Built in, each lower-better and
measured from the runs themselves, at no extra call:

- `Cost(pricing)`: what the module's LLM calls cost per example, priced per model by a
  `promptimus.observe.pricing` table (the metric's own calls, an LLMJudge's, are left out);
- `Latency(clock=None)`: seconds per example, as `evaluate` measured them (`EvalRow.latency`),
  or by `clock` (any `() -> float`; a test injects one and counts, never waits);
- `Tokens()` (or `"tokens"`): tokens per example, prompt and completion.

The strings `"latency"` and `"tokens"` stand for `Latency()` and `Tokens()`; a cost needs its
prices, so `"cost"` is refused with how to write `Cost({...})`.
"""

from __future__ import annotations

import contextvars
import inspect
import math
import numbers
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Literal

from ..core.hooks import CallNext, RemovableHandle, register_module_call_interceptor
from ..errors import InvalidObjective, MetricResultError, UnpricedModel
from ..evals.score import Score
from ..observe.pricing import Pricing, check_pricing, cost_of
from ..observe.provider_calls import ProviderCall
from ..observe.usage import collecting

__all__ = ["Better", "Cost", "Latency", "Objective", "Tokens"]

Better = Literal["higher", "lower"]


class Objective:
    """`measure(example, output)` averaged over the examples of a run, and whether `better` is
    a `"higher"` or a `"lower"` value. An example whose module raised counts 0."""

    #: the measure needs the examples to run in this process (it watches their calls)
    in_process = False

    def __init__(self, measure: Callable[..., Any] | None, *, better: Better = "higher") -> None:
        if better not in ("higher", "lower"):
            raise InvalidObjective(
                f'better must be "higher" or "lower", got {better!r}: say which way the '
                "objective improves."
            )
        if measure is not None and not callable(measure):
            raise InvalidObjective(
                f"An objective's measure must be callable as measure(example, output), got "
                f"{type(measure).__name__} {measure!r:.60}."
            )
        self.measure = measure
        self.better: Better = better

    @property
    def is_metric(self) -> bool:
        """Measured by calling a function on each example's output (fit's metric may be one)."""
        return self.measure is not None

    def recorder(self, module: Any) -> AbstractContextManager[Any]:
        """Opened around every evaluation of `module`; what it yields reaches `value`."""
        return nullcontext()

    async def value(self, rows: Sequence[Any], recorded: Any) -> float:
        """The objective's value for a run whose rows are `rows`."""
        assert self.measure is not None
        total = 0.0
        for row in rows:
            if row.output is None and row.error is not None:
                continue  # the module raised: 0
            result = self.measure(row.example, row.output)
            if inspect.isawaitable(result):
                result = await result
            total += _number(result, self.measure)
        return total / len(rows) if rows else 0.0

    def __repr__(self) -> str:
        name = getattr(self.measure, "__name__", repr(self.measure))
        return f"Objective({name}, better={self.better!r})"


def _number(result: Any, measure: Any) -> float:
    value = result.value if isinstance(result, Score) else result
    if not isinstance(value, bool) and isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number):
            return number
    name = getattr(measure, "__name__", repr(measure))
    raise MetricResultError(
        f"The objective's measure {name} returned {type(value).__name__} {value!r:.60}; a "
        "measure must return a finite number or a Score."
    )


class Tokens(Objective):
    """Tokens per example (prompt and completion, as the provider reported them); lower is
    better."""

    def __init__(self) -> None:
        super().__init__(None, better="lower")

    async def value(self, rows: Sequence[Any], recorded: Any) -> float:
        return sum(row.usage.total_tokens for row in rows) / len(rows) if rows else 0.0

    def __repr__(self) -> str:
        return "Tokens()"


class Latency(Objective):
    """Seconds per example; lower is better. Without `clock`, the module call's time as
    `evaluate` measured it (`EvalRow.latency`, any runner); with `clock` (a `() -> float`), each
    call of the trained module is timed by that clock, in this process."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        super().__init__(None, better="lower")
        if clock is not None and not callable(clock):
            raise InvalidObjective(
                f"Latency's clock must be a function () -> seconds such as time.perf_counter, "
                f"got {type(clock).__name__} {clock!r:.40}."
            )
        self.clock = clock
        self.in_process = clock is not None

    def recorder(self, module: Any) -> AbstractContextManager[Any]:
        if self.clock is None:
            return nullcontext()
        return _timing(module, self.clock)

    async def value(self, rows: Sequence[Any], recorded: Any) -> float:
        if not rows:
            return 0.0
        if self.clock is None:
            return float(sum(row.latency for row in rows)) / len(rows)
        timing: _Timing = recorded
        if timing.problem is not None:
            raise InvalidObjective(timing.problem)
        return sum(timing.durations) / len(rows)

    def __repr__(self) -> str:
        return "Latency()" if self.clock is None else f"Latency(clock={self.clock!r})"


class Cost(Objective):
    """What the trained module's LLM calls cost per example, in the currency of `pricing`
    (`{model: (input, output[, cached_input[, cache_write]])}` per million tokens, as
    `track_usage` takes it); lower is better. A model missing from the table raises
    `UnpricedModel` after the evaluation that met it: an unknown cost is never counted as 0."""

    in_process = True

    def __init__(self, pricing: Pricing) -> None:
        super().__init__(None, better="lower")
        table = check_pricing(pricing)
        if table is None:
            raise InvalidObjective(
                "Cost needs a price table {model: (input, output)} per million tokens, got None."
            )
        self.pricing = table

    def recorder(self, module: Any) -> AbstractContextManager[Any]:
        return _costing(module, self)

    async def value(self, rows: Sequence[Any], recorded: Any) -> float:
        sink: _CostSink = recorded
        if sink.unpriced:
            models = ", ".join(repr(m) for m in sorted(sink.unpriced))
            raise UnpricedModel(
                f"The Cost objective has no price for the model {models}; add it to the pricing "
                f"table (known: {', '.join(sorted(self.pricing)) or 'none'})."
            )
        return sink.total / len(rows) if rows else 0.0

    def __repr__(self) -> str:
        return f"Cost({sorted(self.pricing)})"


class _CostSink:
    """Prices every finished LLM call a module of the trained tree makes."""

    def __init__(self, members: set[int], cost: Cost) -> None:
        self.members = members
        self.cost = cost
        self.total = 0.0
        self.unpriced: set[str] = set()

    def before(self, call: ProviderCall) -> None:
        pass

    def after(self, path: str, call: ProviderCall) -> None:
        if call.kind != "llm" or id(call.module) not in self.members or call.usage is None:
            return
        price = cost_of(self.cost.pricing, call.model, call.usage)
        if price is None:
            self.unpriced.add(str(call.model))
        else:
            self.total += price


@contextmanager
def _costing(module: Any, cost: Cost) -> Iterator[_CostSink]:
    members = {id(module)}
    if hasattr(module, "named_modules"):
        members |= {id(m) for _, m in module.named_modules()}
    sink = _CostSink(members, cost)
    with collecting(sink):
        yield sink


class _Timing:
    def __init__(self, root: Any, clock: Callable[[], float]) -> None:
        self.root = root
        self.clock = clock
        self.durations: list[float] = []
        self.problem: str | None = None  # a bad reading, raised once the run is over

    def read(self) -> float | None:
        now = self.clock()
        if isinstance(now, bool) or not isinstance(now, numbers.Real) or not math.isfinite(now):
            self.problem = f"Latency's clock returned {now!r}; it must return seconds (a float)."
            return None
        return float(now)


_timings: contextvars.ContextVar[_Timing | None] = contextvars.ContextVar(
    "promptimus_objective_timing", default=None
)
_inside: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "promptimus_objective_timed", default=False
)
_handle: RemovableHandle | None = None


async def _time_root_call(
    module: Any, call_next: CallNext, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    timing = _timings.get()
    if timing is None or module is not timing.root or _inside.get():
        return await call_next(args, kwargs)
    token = _inside.set(True)  # a module calling itself again is one example, timed once
    started = timing.read()
    try:
        return await call_next(args, kwargs)
    finally:
        ended = timing.read()
        if started is not None and ended is not None:
            timing.durations.append(ended - started)
        _inside.reset(token)


@contextmanager
def _timing(module: Any, clock: Callable[[], float]) -> Iterator[_Timing]:
    global _handle
    if _handle is None:
        _handle = register_module_call_interceptor(_time_root_call)
    timing = _Timing(module, clock)
    token = _timings.set(timing)
    try:
        yield timing
    finally:
        _timings.reset(token)
