"""`FewShot`: bootstrap demonstrations from the module's own successful runs, completed with
labelled examples when it has too few."""

from __future__ import annotations

import asyncio
import copy
from typing import Any, Self

from ..argument_checks import positive_int
from ..core import Module, Parameter
from ..errors import NothingToTrain, OptimizationError
from .counted_evaluation import BudgetSpent, Evaluation
from .proposer import _output_text
from .run_state import TrainState


def demo_input(inputs: dict[str, Any]) -> str:
    if len(inputs) == 1:
        return str(next(iter(inputs.values())))
    return "\n".join(f"{key}: {value}" for key, value in inputs.items())


def labelled_output(expected: Any) -> str | None:
    """An example's `expected` written as the module's output would be (None: no label)."""
    if expected is None:
        return None
    text = _output_text(expected)
    return text if text.strip() else None


class FewShot:
    """Runs the module on training examples, keeps the (input, output) pairs that scored at
    least `min_score`, and tries `candidates` random sets of `k` of them as demonstrations on
    the validation set, keeping the best. Demos live in the `demos` list Parameter of a `Prompt`
    (the first in the tree, or the one at `prompt=`), rendered as example user/assistant turns.

    A module that starts from zero (fewer than `k` successes, often none with a small model)
    still gets demos: each set is completed with labelled demos, the training examples' inputs
    with their `expected` written as the module's output (text as it is, a pydantic model as
    its JSON). The history says which were used: the bootstrap entry counts both kinds, and
    every candidate entry has `demos_bootstrapped` and `demos_labelled`. With neither a
    success nor a label there is nothing to show, and FewShot stops.

    `parallel=n` validates up to n candidate sets at once, each on a copy of the module (sharing
    its providers), each with fit's `concurrency` examples in flight; only the sets the budget
    pays for start, and the history is the one the sets tried one by one would write.
    """

    def __init__(
        self,
        k: int = 4,
        *,
        candidates: int = 8,
        min_score: float = 1.0,
        prompt: str | None = None,
        seed: int = 0,
        parallel: int = 1,
    ) -> None:
        self.k = positive_int(k, "FewShot k")
        self.parallel = positive_int(parallel, "FewShot parallel")
        self.candidates = positive_int(candidates, "FewShot candidates")
        self.min_score = min_score
        self.prompt = prompt
        self.seed = seed
        self._params: dict[str, Parameter[Any]] = {}
        self._pool: list[list[str]] | None = None
        self._labelled: list[list[str]] = []
        self._tried = 0

    def attach(self, module: Module) -> Self:
        from ..prompts.prompt import Prompt

        found = [
            (path, m)
            for path, m in module.named_modules()
            if isinstance(m, Prompt) and (self.prompt is None or path == self.prompt)
        ]
        if not found:
            where = f" at {self.prompt!r}" if self.prompt is not None else ""
            raise NothingToTrain(
                f"FewShot found no Prompt{where} in {type(module).__name__} to hold demos."
            )
        path, target = found[0]
        demos = target._parameters.get("demos")
        if demos is None:
            target.demos = demos = Parameter([])
        if demos.frozen:
            raise NothingToTrain(f"The demos of Prompt {path or 'root'!r} are frozen.")
        self._params = {f"{path}.demos" if path else "demos": demos}
        return self

    def parameters(self) -> dict[str, Parameter[Any]]:
        return dict(self._params)

    async def step(self, state: TrainState) -> bool:
        (path,) = self._params
        if self._pool is None:
            room = state.evaluator.budget.calls - state.evaluator.calls - len(state.valset)
            train = list(state.trainset)[: max(0, room)]
            state.evaluator.ensure(len(train) + len(state.valset))
            run = await state.evaluator.run(train)
            succeeded = [
                row
                for row in run.rows
                if not getattr(row, "error", None) and float(row.score) >= self.min_score
            ]
            self._pool = [[demo_input(row.inputs), _output_text(row.output)] for row in succeeded]
            reason = f"bootstrapped {len(self._pool)} demos from {len(train)} examples"
            if len(self._pool) < self.k:
                shown = {id(row.example) for row in succeeded}
                self._labelled = [
                    [demo_input(example.inputs), label]
                    for example in state.trainset
                    if id(example) not in shown
                    and (label := labelled_output(example.expected)) is not None
                ]
                if self._labelled:
                    reason += (
                        f"; fewer than k={self.k}, so each set is completed with labelled demos "
                        f"(inputs -> expected) from {len(self._labelled)} examples"
                    )
            state.record(
                {
                    "candidate": None,
                    "parent": state.best_id,
                    "path": path,
                    "value": None,
                    "accepted": False,
                    "reason": reason,
                    "demos_bootstrapped": len(self._pool),
                    "demos_labelled": len(self._labelled),
                }
            )
            if not self._pool and not self._labelled:
                return False
        if self._tried >= self.candidates:
            return False
        if self.parallel > 1:
            return await self._validate_together(state, path)
        self._tried += 1
        demos, labelled = self._draw(state, 0)
        state.evaluator.ensure(len(state.valset))
        self._params[path].value = demos
        try:
            counts = {"demos_bootstrapped": len(demos) - labelled, "demos_labelled": labelled}
            await state.validate(0, path, demos, counts, worse="not better on validation")
        finally:
            state.load_best()
        return True

    def _draw(self, state: TrainState, ahead: int) -> tuple[list[list[str]], int]:
        """The demo set of the step `ahead` steps from now, and how many of it are labelled."""
        assert self._pool is not None
        rng = state.rng(self.seed, "fewshot", ahead=ahead)
        if len(self._pool) >= self.k:
            return rng.sample(self._pool, self.k), 0
        fill = rng.sample(self._labelled, min(self.k - len(self._pool), len(self._labelled)))
        return [*self._pool, *fill], len(fill)

    async def _validate_together(self, state: TrainState, path: str) -> bool:
        """Validate the next sets side by side, each on its own copy of the module, then record
        them in order, as one by one."""
        size = len(state.valset)
        left = state.evaluator.budget.calls - state.evaluator.calls
        group = min(self.parallel, self.candidates - self._tried, left // size)
        if group < 1 or not state.evaluator.can_afford(group * size):
            raise BudgetSpent
        drawn = [self._draw(state, ahead) for ahead in range(group)]
        copies = [self._copy_with(state.module, path, demos) for demos, _ in drawn]
        self._tried += group
        evaluator = state.evaluator
        calls, usage = evaluator.calls, evaluator.usage
        try:
            async with asyncio.TaskGroup() as runs:
                tasks = [
                    runs.create_task(evaluator.run(state.valset, module=module, validation=True))
                    for module in copies
                ]
        except BaseExceptionGroup as failed:  # the first error, as a serial run raises it
            raise failed.exceptions[0] from None
        measured: list[Evaluation] = [task.result() for task in tasks]
        # each entry records the spend up to its candidate, in order, as one by one
        spent, evaluator.calls, evaluator.usage = evaluator.calls, calls, usage
        for (demos, labelled), val in zip(drawn, measured, strict=True):
            evaluator.calls += size
            evaluator.usage = evaluator.usage + val.usage
            counts = {"demos_bootstrapped": len(demos) - labelled, "demos_labelled": labelled}
            await state.validate(
                0, path, demos, counts, worse="not better on validation", measured=val
            )
        assert evaluator.calls == spent
        return True

    def _copy_with(self, module: Module, path: str, demos: list[list[str]]) -> Module:
        try:
            clone = copy.deepcopy(module)
        except Exception as exc:
            raise OptimizationError(
                f"FewShot(parallel={self.parallel}) validates candidates on copies of the "
                f"module, but {type(module).__name__} cannot be copied ({type(exc).__name__}: "
                f"{exc}). Use parallel=1, or keep uncopyable objects out of the module."
            ) from exc
        dict(clone.named_parameters())[path].value = demos
        return clone
