"""`fit`: evaluate the baseline, let an optimizer improve the module until the budget is spent,
keep (and save) the best values found."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..core import Module, Parameter
from ..dto import Usage
from ..dto.display import clip, html_table, plural
from ..errors import BudgetTooSmall, EmptyTrainingData, InvalidArgument, OptimizationError
from ..evals.batch_options import BatchOptions, batch_options
from ..evals.example import example_list
from ..evals.input_fit import check_inputs
from ..evals.runner import Runner, check_runner
from .budget import Budget
from .counted_evaluation import BudgetSpent, CountedEvaluator
from .run_state import HISTORY, TrainState


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
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = [(path, clip(repr(value), 200)) for path, value in self.best_values.items()]
        return html_table(self.summary(), ["parameter", "best value"], rows)


async def fit(
    module: Module,
    trainset: Sequence[Any],
    metric: Callable[..., Any],
    *,
    optimizer: Optimizer,
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
    here, whatever the number of workers. `batch_validation=True` (or `BatchOptions(...)`)
    scores validation sets through the providers' batch APIs (see `evaluate`'s `batch`)."""
    _check_optimizer(optimizer)
    runner = check_runner(runner)
    trainset = example_list(trainset, "fit's trainset")
    valset = trainset if valset is None else example_list(valset, "fit's valset")
    if not trainset:
        raise EmptyTrainingData("fit() got an empty trainset; give it at least one Example.")
    if not valset:
        raise EmptyTrainingData("fit() got an empty valset; give it examples or pass None.")
    check_inputs(module, trainset, "fit's trainset")
    if valset is not trainset:
        check_inputs(module, valset, "fit's valset")
    budget = Budget.of(budget)
    if budget.calls < len(valset):
        raise BudgetTooSmall(
            f"budget of {budget.calls} module calls cannot pay for the baseline evaluation of "
            f"{len(valset)} validation examples; raise it to at least {len(valset)} (and more "
            "to leave room for training)."
        )
    folder = _run_folder(checkpoint_dir, resume)
    optimizer.attach(module)  # last check: NothingToTrain; FewShot adds its demos here
    params = optimizer.parameters()
    evaluator = CountedEvaluator(module, metric, budget, concurrency=concurrency, runner=runner)
    evaluator.validation_batch = batch_options(batch_validation)
    state = TrainState(module, params, trainset, valset, evaluator, checkpoint_dir=folder)
    bar = _progress_bar(budget.calls) if progress else None
    if bar is not None:
        evaluator.on_calls = bar.update
    try:
        if not (resume and state.resume()):
            baseline = await evaluator.run(valset, validation=True)
            state.start(baseline.scores)
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
    )


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
