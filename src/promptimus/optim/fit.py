"""`fit`: evaluate the baseline, let an optimizer improve the module until the budget is spent,
keep (and save) the best values found."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..argument_checks import positive_int
from ..core import Module, Parameter
from ..dto import Usage
from ..dto.display import clip, html_table, plural
from ..errors import (
    BudgetTooSmall,
    EmptyTrainingData,
    InvalidArgument,
    NoCandidateFits,
    OptimizationError,
)
from ..evals.batch_options import BatchOptions, batch_options
from ..evals.example import example_list
from ..evals.input_fit import check_inputs
from ..evals.runner import Runner, check_runner
from .budget import Budget
from .counted_evaluation import BudgetSpent, CountedEvaluator
from .frontier import FrontierPoint
from .objective_set import ObjectiveSet
from .objectives import Objective
from .run_state import HISTORY, TrainState
from .selection import BestUnder, InOrder, SelectionRule, check_rule


class Optimizer(Protocol):
    def attach(self, module: Module) -> Any: ...
    def parameters(self) -> dict[str, Parameter[Any]]: ...
    async def step(self, state: TrainState) -> bool: ...


@dataclass
class TrainResult:
    baseline_score: float
    best_score: float
    history: list[dict[str, Any]]
    checkpoint_path: Path | None
    usage: Usage
    calls: int = 0
    best_values: dict[str, Any] = field(default_factory=dict)
    #: the validated candidates no other beats on every objective, in candidate order
    frontier: list[FrontierPoint] = field(default_factory=list)
    #: the objectives and which way each is better ({"score": "higher"} for one metric)
    objectives: dict[str, str] = field(default_factory=lambda: {"score": "higher"})

    def pick(self, rule: SelectionRule) -> FrontierPoint:
        """The frontier candidate `rule` prefers (`Weighted({...})`, `BestUnder(...)`); apply
        it with `point.apply(module)`. `NoCandidateFits` when none meets a rule's bounds."""
        rule = check_rule(rule, "TrainResult.pick")
        rule.check(self.objectives)
        fitting = [p for p in self.frontier if rule.fits(p.objectives, self.objectives)]
        if not fitting:
            bounds = rule.describe(self.objectives) if isinstance(rule, BestUnder) else repr(rule)
            shown = "; ".join(
                f"#{p.candidate} " + ", ".join(f"{n} {v:g}" for n, v in p.objectives.items())
                for p in self.frontier
            )
            raise NoCandidateFits(
                f"No candidate on the frontier has {bounds}. The frontier: {shown}. Loosen the "
                "bounds, or train longer."
            )
        return max(fitting, key=lambda p: rule.key(p.objectives, self.objectives))

    # --- display: a short summary; `history` and `best_values` hold everything ---------------

    def summary(self) -> str:
        """One line: baseline and best score, candidates tried and kept, calls and tokens."""
        tried = [e for e in self.history if "accepted" in e and e.get("reason") != "baseline"]
        kept = sum(bool(entry["accepted"]) for entry in tried)
        return (
            f"TrainResult: score {self.baseline_score:.3f} -> {self.best_score:.3f}; "
            f"{plural(len(tried), 'candidate')} ({kept} kept), {plural(self.calls, 'call')}, "
            f"{self.usage.total_tokens} tokens"
        )

    def __repr__(self) -> str:
        return f"<{self.summary()}>"

    def __str__(self) -> str:
        lines = [self.summary()]
        values = list(self.best_values.items())
        lines += [f"  {path} = {clip(repr(value), 70)}" for path, value in values[:8]]
        if len(values) > 8:
            lines.append(f"  … {len(values) - 8} more parameters in best_values")
        if self.checkpoint_path is not None:
            lines.append(f"  saved to {self.checkpoint_path}")
        if len(self.objectives) > 1:
            lines.append(f"  frontier ({plural(len(self.frontier), 'candidate')}):")
            lines += [f"    {self._point(point)}" for point in self.frontier]
        return "\n".join(lines)

    @staticmethod
    def _point(point: FrontierPoint) -> str:
        shown = ", ".join(f"{name} {value:.4g}" for name, value in point.objectives.items())
        return f"#{point.candidate}: {shown}" + (" (kept)" if point.chosen else "")

    def _repr_html_(self) -> str:
        rows = [(path, clip(repr(value), 200)) for path, value in self.best_values.items()]
        page = html_table(self.summary(), ["parameter", "best value"], rows)
        if len(self.objectives) > 1:
            points = [(self._point(point),) for point in self.frontier]
            page += html_table("frontier", ["candidate: objectives"], points)
        return page


async def fit(
    module: Module,
    trainset: Sequence[Any],
    metric: Callable[..., Any] | None = None,
    *,
    optimizer: Optimizer,
    objectives: Mapping[str, Any] | None = None,
    select: SelectionRule | None = None,
    valset: Sequence[Any] | None = None,
    budget: int | Budget,
    checkpoint_dir: str | os.PathLike[str] | None = None,
    resume: bool = False,
    progress: bool = True,
    concurrency: int = 8,
    runner: Runner | None = None,
    batch_validation: bool | BatchOptions = False,
) -> TrainResult:
    """Improve `module`'s trainable parameters on `trainset`, judged by `metric` on `valset`
    (the train set when None). `budget` counts module calls made for evaluation, the baseline
    included; the run stops before it would pass it. With `checkpoint_dir`, `best.toml` and
    `history.jsonl` are written after the baseline and after every candidate; `resume=True`
    continues a run saved there. The module ends holding the best values found. `runner` says
    where evaluations run (see `evaluate`): the optimizer stays here, and the budget is counted
    here, whatever the number of workers. `concurrency` bounds the examples evaluated at once;
    the report, and so the run, is the same at any concurrency for a deterministic model.
    `objectives={"score": metric, "cost": Cost(PRICES)}` instead of `metric` gives
    `TrainResult.frontier`; `select=` (`Weighted`, `BestUnder`) is then the rule training keeps
    the best by (else the best score, ties broken by the objectives in order).
    `batch_validation=True` (or `BatchOptions(...)`) scores validation sets through the providers'
    batch APIs (see `evaluate`'s `batch`)."""
    _check_optimizer(optimizer)
    runner = check_runner(runner)
    concurrency = positive_int(concurrency, "fit's concurrency")
    metric, declared, select = _objectives(metric, objectives, select, runner)
    trainset, valset = _datasets(module, trainset, valset)
    budget = _budget(budget, len(valset))
    folder = _run_folder(checkpoint_dir, resume)
    optimizer.attach(module)  # last check: NothingToTrain; FewShot adds its demos here
    params = optimizer.parameters()
    evaluator = CountedEvaluator(
        module, metric, budget, concurrency=concurrency, runner=runner, objectives=declared
    )
    evaluator.validation_batch = batch_options(batch_validation)
    state = TrainState(module, params, trainset, valset, evaluator, checkpoint_dir=folder)
    if declared is not None:
        state.directions = dict(declared.directions)
        state.rule = select or InOrder(list(declared.objectives))
    bar = _progress_bar(budget.calls) if progress else None
    if bar is not None:
        evaluator.on_calls = bar.update
    try:
        if not (resume and state.resume()):
            baseline = await evaluator.run(valset, validation=True)
            state.start(baseline.scores, await evaluator.objective_values(baseline))
        elif bar is not None:
            bar.update(evaluator.calls)
        while True:
            try:
                if not await optimizer.step(state):
                    break
            except BudgetSpent:
                break
    finally:
        if state.candidates:
            state.load_best()
        if bar is not None:
            bar.close()
    return TrainResult(
        baseline_score=state.baseline_score,
        best_score=state.best_score,
        history=list(state.history),
        checkpoint_path=state.best_path,
        usage=evaluator.usage,
        calls=evaluator.calls,
        best_values=state.snapshot(),
        frontier=state.frontier(),
        objectives=dict(state.directions or {"score": "higher"}),
    )


def _budget(budget: int | Budget, validation_examples: int) -> Budget:
    """The budget, once it is sure to pay for the baseline evaluation at least."""
    budget = Budget.of(budget)
    if budget.calls < validation_examples:
        raise BudgetTooSmall(
            f"budget of {budget.calls} module calls cannot pay for the baseline evaluation of "
            f"{validation_examples} validation examples; raise it to at least "
            f"{validation_examples} (and more to leave room for training)."
        )
    return budget


def _objectives(
    metric: Callable[..., Any] | None, objectives: Any, select: Any, runner: Runner
) -> tuple[Callable[..., Any], ObjectiveSet | None, SelectionRule | None]:
    """The metric training learns from, the declared objectives (None for one metric) and the
    checked `select=` rule."""
    declared = ObjectiveSet.of(metric, objectives)
    if declared is None:
        if metric is None:
            raise InvalidArgument(
                "fit() needs a metric, fn(example, output) -> float | Score, or objectives="
                "{'score': metric, ...}."
            )
        if select is None:
            return metric, None, None
        declared = ObjectiveSet({"score": Objective(metric)}, "score")
    if select is not None:
        select = check_rule(select, "fit's select=")
        select.check(declared.directions)
    declared.check_runner(runner)
    return declared.metric, declared, select


def _datasets(
    module: Module, trainset: Sequence[Any], valset: Sequence[Any] | None
) -> tuple[list[Any], list[Any]]:
    train = example_list(trainset, "fit's trainset")
    val = train if valset is None else example_list(valset, "fit's valset")
    if not train:
        raise EmptyTrainingData("fit() got an empty trainset; give it at least one Example.")
    if not val:
        raise EmptyTrainingData("fit() got an empty valset; give it examples or pass None.")
    check_inputs(module, train, "fit's trainset")
    if val is not train:
        check_inputs(module, val, "fit's valset")
    return train, val


def _check_optimizer(optimizer: Any) -> None:
    missing = [
        name
        for name in ("attach", "parameters", "step")
        if not callable(getattr(optimizer, name, None))
    ]
    if missing:
        raise InvalidArgument(
            f"fit's optimizer must be an optimizer such as Reflective(teacher=llm) or "
            f"FewShot(k=4), got {type(optimizer).__name__} (it has no {', '.join(missing)})."
        )


def _run_folder(checkpoint_dir: str | os.PathLike[str] | None, resume: bool) -> Path | None:
    """The run's folder (None without `checkpoint_dir`), once it is sure it can be used."""
    folder = None if checkpoint_dir is None else _writable_folder(Path(checkpoint_dir))
    if resume and folder is None:
        raise InvalidArgument("fit(resume=True) needs the checkpoint_dir of the run to continue.")
    if folder is not None and not resume and (folder / HISTORY).exists():
        raise OptimizationError(
            f"{folder} already holds a training run ({HISTORY}); pass resume=True to continue "
            "it, or another checkpoint_dir to start afresh."
        )
    return folder


def _writable_folder(folder: Path) -> Path:
    """`folder`, once it is sure it can be a folder: neither it nor any parent is a file. Checked
    before the baseline, so a run never spends calls it cannot save."""
    for path in (folder, *folder.parents):
        if path.is_dir():
            return folder
        if os.path.lexists(path):
            raise OptimizationError(
                f"checkpoint_dir {str(folder)!r} cannot be created: {str(path)!r} is not a "
                "folder. Pass a folder path (it is created if missing)."
            )
    return folder


def _progress_bar(total: int) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # progress bars are optional
        return None
    return tqdm(total=total, desc="fit (module calls)", unit="call", leave=False)
