"""`FewShot`: bootstrap demonstrations from the module's own successful runs."""

from __future__ import annotations

from typing import Any, Self

from ..core import Module, Parameter
from ..errors import InvalidArgument, NothingToTrain
from .proposer import _output_text
from .run_state import TrainState


def demo_input(inputs: dict[str, Any]) -> str:
    if len(inputs) == 1:
        return str(next(iter(inputs.values())))
    return "\n".join(f"{key}: {value}" for key, value in inputs.items())


class FewShot:
    """Runs the module on training examples, keeps the (input, output) pairs that scored at
    least `min_score`, and tries `candidates` random sets of `k` of them as demonstrations on
    the validation set, keeping the best. Demos live in the `demos` list Parameter of a `Prompt`
    (the first in the tree, or the one at `prompt=`), rendered as example user/assistant turns.
    """

    def __init__(
        self,
        k: int = 4,
        *,
        candidates: int = 8,
        min_score: float = 1.0,
        prompt: str | None = None,
        seed: int = 0,
    ) -> None:
        if k < 1 or candidates < 1:
            raise InvalidArgument(
                f"FewShot needs k >= 1 and candidates >= 1 (got {k}, {candidates})."
            )
        self.k = k
        self.candidates = candidates
        self.min_score = min_score
        self.prompt = prompt
        self.seed = seed
        self._params: dict[str, Parameter[Any]] = {}
        self._pool: list[list[str]] | None = None
        self._tried = 0

    def attach(self, module: Module) -> Self:
        from ..modules.prompt import Prompt

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
            self._pool = [
                [demo_input(row.inputs), _output_text(row.output)]
                for row in run.rows
                if not getattr(row, "error", None) and float(row.score) >= self.min_score
            ]
            state.record(
                {
                    "candidate": None,
                    "parent": state.best_id,
                    "path": path,
                    "value": None,
                    "accepted": False,
                    "reason": f"bootstrapped {len(self._pool)} demos from {len(train)} examples",
                }
            )
            if not self._pool:
                return False
        if self._tried >= self.candidates:
            return False
        self._tried += 1
        rng = state.rng(self.seed, "fewshot")
        demos = rng.sample(self._pool, min(self.k, len(self._pool)))
        state.evaluator.ensure(len(state.valset))
        self._params[path].value = demos
        try:
            val = await state.evaluator.run(state.valset)
            cid = state.add_candidate(0, path, demos, val.scores)
            better = val.score > state.best_score
            state.record(
                {
                    "candidate": cid,
                    "parent": 0,
                    "path": path,
                    "value": demos,
                    "val_score": val.score,
                    "val_scores": val.scores,
                    "accepted": better,
                    "reason": "beats best" if better else "not better on validation",
                },
                accepted_candidate=cid if better else None,
            )
        finally:
            state.load_best()
        return True
