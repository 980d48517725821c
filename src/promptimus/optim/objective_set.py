"""The objectives of one training run, as `fit` was given them: checked, named, in order, with
the metric that drives training (the one `evaluate` scores with and optimizers learn from)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from typing import Any

from ..errors import InvalidArgument, InvalidObjective
from ..evals.runner import InProcessRunner, Runner
from ..evals.usage_collector import UsageTotals, collecting
from .objectives import Better, Latency, Objective, Tokens

__all__ = ["ObjectiveSet"]

_BUILT_IN: dict[str, Callable[[], Objective]] = {"latency": Latency, "tokens": Tokens}


class ObjectiveSet:
    """`objectives` by name in the order given; `primary` names the metric training learns from
    (the one named "score", else the first metric), whose value is the run's mean score."""

    def __init__(self, objectives: dict[str, Objective], primary: str) -> None:
        self.objectives = objectives
        self.primary = primary

    @classmethod
    def of(cls, metric: Any, objectives: Any) -> ObjectiveSet | None:
        """The set `fit(metric, objectives=...)` declares; None for a single-metric fit."""
        if objectives is None:
            return None
        if metric is not None:
            raise InvalidArgument(
                "fit() got both a metric and objectives: give the metric either as fit's "
                "metric or as an objective ({'score': metric, ...}), not both."
            )
        if not isinstance(objectives, Mapping):
            raise InvalidObjective(
                "objectives must be a dict {name: metric | Objective | 'latency' | 'tokens'}, "
                f"got {type(objectives).__name__}."
            )
        checked = {_name(name): _objective(name, value) for name, value in objectives.items()}
        metrics = [name for name, objective in checked.items() if objective.is_metric]
        if not metrics:
            raise InvalidObjective(
                "objectives need a metric to train from, such as {'score': exact_match, ...}; "
                f"got only {', '.join(checked) or 'none'}."
            )
        primary = "score" if "score" in metrics else metrics[0]
        if checked[primary].better != "higher":
            raise InvalidObjective(
                f"The metric training learns from ({primary!r}) must be better when higher (a "
                "score from 0 to 1); declare it as a plain metric or better='higher'."
            )
        return cls(checked, primary)

    @property
    def metric(self) -> Callable[..., Any]:
        measure = self.objectives[self.primary].measure
        assert measure is not None
        return measure

    @property
    def directions(self) -> dict[str, Better]:
        return {name: objective.better for name, objective in self.objectives.items()}

    def check_runner(self, runner: Runner) -> None:
        watched = [name for name, o in self.objectives.items() if o.in_process]
        if watched and not isinstance(runner, InProcessRunner):
            raise InvalidObjective(
                f"The objective(s) {', '.join(watched)} watch the module's calls in this "
                f"process, but the runner {type(runner).__name__} runs them elsewhere. Use the "
                "default runner, or objectives measured from the rows ('tokens', Latency())."
            )

    def recording(self, module: Any, stack: ExitStack) -> dict[str, Any]:
        """Open every objective's recorder on `stack`, around one evaluation."""
        return {
            name: stack.enter_context(objective.recorder(module))
            for name, objective in self.objectives.items()
            if name != self.primary
        }

    async def values(
        self, rows: Sequence[Any], score: float, recorded: Mapping[str, Any]
    ) -> tuple[dict[str, float], UsageTotals]:
        """Each objective's value for a run (`score`: the primary metric's mean), and the
        usage of the measures' own LLM calls (an LLMJudge used as an objective)."""
        values: dict[str, float] = {}
        with collecting() as usage:
            for name, objective in self.objectives.items():
                if name == self.primary:
                    values[name] = score
                else:
                    values[name] = await objective.value(rows, recorded.get(name))
        return values, usage


def _name(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidObjective(f"An objective's name must be a non-empty str, got {name!r}.")
    return name


def _objective(name: str, value: Any) -> Objective:
    if isinstance(value, Objective):
        return value
    if isinstance(value, str):
        if value in _BUILT_IN:
            return _BUILT_IN[value]()
        if value == "cost":
            raise InvalidObjective(
                f"Objective {name!r}: a cost needs the models' prices; write "
                "Cost({'model': (input, output)}) with prices per million tokens."
            )
        raise InvalidObjective(
            f"Objective {name!r} is {value!r}; the built-in names are 'latency' and 'tokens' "
            "(and Cost(pricing) for a cost)."
        )
    if callable(value):
        return Objective(value, better="higher")
    raise InvalidObjective(
        f"Objective {name!r} must be a metric fn(example, output), an Objective, 'latency' or "
        f"'tokens'; got {type(value).__name__} {value!r:.40}."
    )
