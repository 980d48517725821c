"""`Reflective`: improve text parameters from what failed (the GEPA / TextGrad family)."""

from __future__ import annotations

import inspect
import random
from dataclasses import dataclass
from typing import Any, Self

from ..argument_checks import positive_int
from ..core import Module, Parameter
from ..errors import InvalidArgument, OptimizationError
from ..protocols.llm import LLMProtocol
from .blame import blamed_modules, owner_of
from .counted_evaluation import BudgetSpent
from .merge import MergePlan, plan_merge
from .proposer import ProposalRequest, ProposeFn, TeacherProposer
from .run_state import TrainState
from .template_check import is_role, role_break, template_break
from .trainable import require_trainable


@dataclass
class Candidate:
    """A proposed value for one parameter. `rejected` says why it may not be applied (a
    template variable added or dropped, an empty or unchanged proposal), else None."""

    path: str
    value: str
    previous: str
    rejected: str | None = None


class Reflective:
    """One module at a time: a step evaluates a minibatch, reads the failing rows' traces to
    find the module whose calls went wrong (the one that raised, else the one that gave the
    wrong answer, else one called in those runs, in turn; see `targets`), and asks the
    proposer for a new value of each trainable parameter that module owns, showing it the
    worst rows with that module's calls in their runs (`trace_tokens` per row). The changes
    are tried together on the same minibatch and, if better there, on the validation set,
    where they are accepted if they beat the best so far. Parents come from the Pareto front
    of per-example validation scores. The history entry of a step keeps the rows it came
    from (`examples`, each with the trace shown), and `changes` when it changed several.

    With `merge=True`, a step first looks for two candidates on the front that improved
    different parameters since a common ancestor and scores their merge (each changed
    parameter from the candidate that changed it) on the validation set, keeping it only if
    it beats the best; its history entry names both parents and which parameter came from
    which (`merge`). Each pair is tried once.

    Nothing a proposal does is kept unless it proves better: an empty, unchanged or
    template-breaking proposal is refused before any call, one that does no better on the
    minibatch or on validation is reverted, and the history entry of each says why (with the
    scores it lost on). A teacher that proposes nonsense thus spends its budget and changes
    nothing.

    PyTorch style, by hand: `opt.attach(module)`, `cand = await opt.propose(rows)`,
    `opt.apply(cand)`, evaluate, `opt.revert(cand)` if it did worse. `fit` runs that loop.
    """

    def __init__(
        self,
        teacher: LLMProtocol | None = None,
        *,
        propose: ProposeFn | None = None,
        minibatch_size: int = 4,
        seed: int = 0,
        trace_tokens: int = 400,
        merge: bool = False,
    ) -> None:
        if (teacher is None) == (propose is None):
            raise InvalidArgument(
                "Reflective needs exactly one of teacher=<an LLM> or propose=<async fn(request) "
                "-> str>."
            )
        if propose is not None and not callable(propose):
            raise InvalidArgument(
                f"propose= must be a function (request) -> str, got {type(propose).__name__}."
            )
        if not isinstance(merge, bool):
            raise InvalidArgument(f"Reflective(merge=) takes True or False, got {merge!r}.")
        self.merge = merge
        minibatch_size = positive_int(minibatch_size, "minibatch_size")
        self.trace_tokens = positive_int(trace_tokens, "trace_tokens")
        self.proposer: TeacherProposer | None = None
        if teacher is not None:
            self.proposer = TeacherProposer().with_llm(teacher)
        self._propose_fn = propose
        self.minibatch_size = minibatch_size
        self.seed = seed
        self._params: dict[str, Parameter[Any]] = {}
        self._root = "root"
        self._turn = 0

    # --- the steps, usable by hand --------------------------------------------------------

    def attach(self, module: Module) -> Self:
        """Train `module`'s trainable parameters (raises `NothingToTrain` if it has none)."""
        self._params = require_trainable(module)
        self._root = module.path
        return self

    def parameters(self) -> dict[str, Parameter[Any]]:
        return dict(self._params)

    def _param(self, path: str) -> Parameter[Any]:
        if not self._params:
            raise InvalidArgument("Call opt.attach(module) before proposing.")
        try:
            return self._params[path]
        except KeyError:
            raise InvalidArgument(
                f"{path!r} is not a trainable parameter of the attached module; trainable: "
                f"{', '.join(self._params)}."
            ) from None

    async def propose(self, rows: list[Any], *, path: str | None = None) -> Candidate:
        """Ask the proposer for a new value of `path` (by default the next parameter in turn)
        from evaluation `rows` (the proposer sees those scoring below 1, worst first).
        Template-breaking, empty or unchanged proposals come back `rejected`."""
        if path is None:
            self._param(next(iter(self._params), ""))
            path = list(self._params)[self._turn % len(self._params)]
            self._turn += 1
        current = self._param(path).value
        ranked = sorted(rows, key=lambda row: float(getattr(row, "score", 0.0)))
        failing = [row for row in ranked if float(getattr(row, "score", 0.0)) < 1.0]
        shown = failing or ranked
        request = ProposalRequest(path, current, shown, [self._trace_of(r, path) for r in shown])
        if self.proposer is not None:
            value = await self.proposer(request)
        else:
            assert self._propose_fn is not None
            value = self._propose_fn(request)
            if inspect.isawaitable(value):
                value = await value
        if not isinstance(value, str):
            raise OptimizationError(
                f"propose= returned {type(value).__name__} {value!r:.60}; it must return the "
                "new text of the parameter as a str."
            )
        rejected = role_break(path, current, value) or template_break(current, value)
        if not value.strip():
            rejected = "empty proposal"
        elif value == current:
            rejected = "unchanged"
        return Candidate(path=path, value=value, previous=current, rejected=rejected)

    def _trace_of(self, row: Any, path: str) -> str:
        """The calls of the module owning parameter `path` within `row`'s run, trimmed to
        `trace_tokens` tokens ("" when the row has no trace)."""
        trace = getattr(row, "trace", None)
        if trace is None:
            return ""
        rendered: str = trace.render(owner_of(path, self._root), max_tokens=self.trace_tokens)
        return rendered

    def apply(self, candidate: Candidate) -> None:
        if candidate.rejected:
            raise InvalidArgument(
                f"Candidate for {candidate.path!r} was rejected ({candidate.rejected}); it "
                "cannot be applied."
            )
        self._param(candidate.path).value = candidate.value

    def revert(self, candidate: Candidate) -> None:
        self._param(candidate.path).value = candidate.previous

    # --- one step of `fit` ----------------------------------------------------------------

    def _minibatch(self, state: TrainState) -> list[Any]:
        """Step n's minibatch: the next slice of the training set in a seeded shuffle per epoch,
        so every example is seen once per epoch and a resumed run draws the same batches."""
        train = list(state.trainset)
        size = min(self.minibatch_size, len(train))
        batch = []
        for position in range((state.step - 1) * size, state.step * size):
            epoch, index = divmod(position, len(train))
            order = list(range(len(train)))
            random.Random(f"{self.seed}:epoch:{epoch}").shuffle(order)
            batch.append(train[order[index]])
        return batch

    def targets(self, rows: list[Any], turn: int = 0) -> list[str]:
        """The parameters a step changes for failing `rows`: every trainable parameter of the
        module most to blame in their traces (see `promptimus.optim.blame`); when several
        modules are equally to blame, `turn` picks one in turn."""
        if not self._params:
            raise InvalidArgument("Call opt.attach(module) before choosing what to change.")
        owners = [owner_of(path, self._root) for path in self._params]
        blamed = blamed_modules(rows, owners, self._root)
        chosen = blamed[turn % len(blamed)]
        paths = [path for path, owner in zip(self._params, owners, strict=True) if owner == chosen]
        # a prompt's role made trainable beside its text (`requires_grad_(True)` on the module)
        # is left alone while there is text to change: a rewrite of the text cannot be a role
        text = [path for path in paths if not is_role(path, self._param(path).value)]
        return text or paths

    async def step(self, state: TrainState) -> bool:
        """One proposal, tried and accepted or reverted. False when there is nothing to gain."""
        if state.best_score >= 1.0:
            return False
        if self.merge:
            scores = {cid: sum(v) / len(v) for cid, v in state.val_scores.items() if v}
            plan = plan_merge(state.front.front(), state.candidates, scores, state.history)
            if plan is not None:
                await self._try_merge(state, plan)
                return True
        rng = state.rng(self.seed, "reflective")
        parent = state.front.choose(rng)
        batch = self._minibatch(state)
        # a step starts only if it can pay for the minibatch twice; validation is checked later
        state.evaluator.ensure(2 * len(batch))
        state.load(parent)
        try:
            before = await state.evaluator.run(batch)
            worst = sorted(
                (row for row in before.rows if float(row.score) < 1.0),
                key=lambda row: float(row.score),
            )
            entry: dict[str, Any] = {"candidate": None, "parent": parent, "path": None}
            if not worst:
                state.record({**entry, "value": None, "accepted": False, "reason": "no failures"})
                return True
            usable = await self._proposals(state, worst, entry)
            entry["minibatch_before"] = before.total
            if not usable:
                state.record({**entry, "accepted": False, "reason": entry.pop("refusal")})
                return True
            for candidate in usable:
                self.apply(candidate)
            after = await state.evaluator.run(batch)
            entry["minibatch_after"] = after.total
            if after.total <= before.total:
                reason = (
                    f"not better on minibatch: {after.total:g} <= {before.total:g} of "
                    f"{len(batch)} with the current value"
                )
                state.record({**entry, "accepted": False, "reason": reason})
                return True
            if not state.evaluator.can_afford(len(state.valset)):
                reason = "budget spent before validation"
                state.record({**entry, "accepted": False, "reason": reason})
                raise BudgetSpent
            kept = ("candidate", "parent", "path", "value")
            extra = {k: v for k, v in entry.items() if k not in kept}
            worse = f"not better on validation: {{score:g}} <= best {state.best_score:g}"
            changes = {c.path: c.value for c in usable}
            several = entry["path"] is None
            await state.validate(
                parent,
                entry["path"],
                entry["value"],
                extra,
                worse=worse,
                changes=changes if several else None,
            )
            return True
        finally:
            state.load_best()

    async def _proposals(
        self, state: TrainState, worst: list[Any], entry: dict[str, Any]
    ) -> list[Candidate]:
        """Ask for a new value of each parameter `targets` names for the failing rows `worst`;
        `entry` (the step's history entry) gains what was proposed, the rows it came from and,
        when nothing can be applied, the `refusal`. The proposals that can be applied."""
        paths = self.targets(worst, state.step - 1)
        proposals = []
        for path in paths:
            proposals.append(await self.propose(worst, path=path))
            if self.proposer is not None:
                state.evaluator.add_usage(self.proposer._last_usage)
        usable = [c for c in proposals if not c.rejected]
        refused = {c.path: c.rejected for c in proposals if c.rejected}
        if len(paths) == 1:
            entry["path"], entry["value"] = paths[0], proposals[0].value
        else:
            entry["value"] = None
            entry["changes"] = {c.path: c.value for c in (usable if refused else proposals)}
            if refused:
                entry["refused"] = refused
        entry["examples"] = [self._evidence(row, paths[0]) for row in worst]
        if not usable:
            entry["refusal"] = "; ".join(
                str(reason) if len(paths) == 1 else f"{path}: {reason}"
                for path, reason in refused.items()
            )
        return usable

    async def _try_merge(self, state: TrainState, plan: MergePlan) -> None:
        """Score `plan`'s merge on the validation set; it is kept only if it beats the best,
        as every candidate (it joins the front either way, like them)."""
        state.evaluator.ensure(len(state.valset))
        state.load(plan.first)
        try:
            for path, value in plan.changes.items():
                self._param(path).value = value
            entry = {"merge": plan.record(), "changes": dict(plan.changes)}
            worse = f"merge not better on validation: {{score:g}} <= best {state.best_score:g}"
            await state.validate(plan.first, None, None, entry, worse=worse, changes=plan.changes)
        finally:
            state.load_best()

    def _evidence(self, row: Any, path: str) -> dict[str, Any]:
        """What the history keeps of a failing row a proposal came from: the row as
        `EvalRow.to_dict` gives it (inputs, expected, output, score, feedback, error) and the
        calls of the changed module in its run, as the proposer was shown them."""
        to_dict = getattr(row, "to_dict", None)
        shown = dict(to_dict()) if callable(to_dict) else {"score": getattr(row, "score", 0.0)}
        for key in ("usage", "latency", "metadata"):
            shown.pop(key, None)
        shown["trace"] = self._trace_of(row, path)
        return shown
