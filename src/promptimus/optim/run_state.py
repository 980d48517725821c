"""`TrainState`: what a training run knows — candidates, their validation scores, the best one,
the history — and how it is written to (and read back from) a checkpoint folder."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..checkpoint.files import atomic_write_bytes
from ..core import Module, Parameter
from ..core.parameters import copy_value
from ..errors import OptimizationError
from .counted_evaluation import CountedEvaluator, Evaluation
from .frontier import FrontierPoint, non_dominated
from .pareto import ParetoFront
from .selection import SelectionRule

BEST = "best.toml"
HISTORY = "history.jsonl"


class TrainState:
    """Candidates are full assignments `{path: value}` of the optimizer's parameters; candidate 0
    is the baseline. The module holds the best candidate's values between steps."""

    def __init__(
        self,
        module: Module,
        params: dict[str, Parameter[Any]],
        trainset: Sequence[Any],
        valset: Sequence[Any],
        evaluator: CountedEvaluator,
        *,
        checkpoint_dir: Path | None = None,
    ) -> None:
        self.module = module
        self.params = params
        self.trainset = trainset
        self.valset = valset
        self.evaluator = evaluator
        self.checkpoint_dir = checkpoint_dir
        self.candidates: dict[int, dict[str, Any]] = {}
        self.val_scores: dict[int, list[float]] = {}
        self.front = ParetoFront()
        self.history: list[dict[str, Any]] = []
        self.best_id = 0
        self.best_score = 0.0
        self.baseline_score = 0.0
        # several objectives (fit's objectives= / select=): each validated candidate's values,
        # their directions, and the rule that says which candidate is best
        self.objective_values: dict[int, dict[str, float]] = {}
        self.directions: dict[str, str] = {}
        self.rule: SelectionRule | None = None

    # --- values ---------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {path: copy_value(p.value) for path, p in self.params.items()}

    def load(self, candidate: int) -> None:
        for path, value in self.candidates[candidate].items():
            self.params[path].value = copy_value(value)

    def load_best(self) -> None:
        self.load(self.best_id)

    @property
    def step(self) -> int:
        """The number of the next step (the baseline is step 0)."""
        return len(self.history)

    def rng(self, seed: int, salt: str = "", *, ahead: int = 0) -> random.Random:
        # one generator per step: a resumed run draws exactly what an uninterrupted one would;
        # `ahead` draws a later step's now (candidates validated together, in parallel)
        return random.Random(f"{seed}:{salt}:{self.step + ahead}")

    # --- recording ------------------------------------------------------------------------

    def add_candidate(
        self,
        parent: int,
        path: str | None,
        value: Any,
        scores: list[float],
        *,
        changes: dict[str, Any] | None = None,
    ) -> int:
        """A new candidate: `parent`'s values with `path` set to `value` (or, for several,
        each of `changes` set)."""
        cid = max(self.candidates) + 1
        assignment = dict(self.candidates[parent])
        for key, new in (changes if changes is not None else {path: value}).items():
            assignment[str(key)] = copy_value(new)
        self.candidates[cid] = assignment
        self.val_scores[cid] = list(scores)
        self.front.add(cid, scores)
        return cid

    def record(self, entry: dict[str, Any], *, accepted_candidate: int | None = None) -> None:
        entry = {"step": self.step, **entry, "calls": self.evaluator.calls}
        entry["tokens"] = self.evaluator.usage.total_tokens
        self.history.append(entry)
        if entry.get("candidate") is not None and "objectives" in entry:
            self.objective_values[entry["candidate"]] = dict(entry["objectives"])
        if accepted_candidate is not None:
            self.best_id = accepted_candidate
            self.best_score = entry["val_score"]
        self.save(best_changed=accepted_candidate is not None)

    async def validate(
        self,
        parent: int,
        path: str | None,
        value: Any,
        entry: dict[str, Any],
        *,
        worse: str,
        measured: Evaluation | None = None,
        changes: dict[str, Any] | None = None,
    ) -> bool:
        """Try the values the module holds now (``parent``'s, with ``path`` set to ``value``,
        or each of ``changes``) on the validation set: they become a candidate, recorded with
        ``entry`` and the scores, and the best one if they beat it (else the reason is
        ``worse``, where ``{score}`` stands for their validation score). True when they did.
        ``measured``: their validation run, made already (on a copy of the module, beside other
        candidates')."""
        val = measured or await self.evaluator.run(self.valset, validation=True)
        values = await self.evaluator.objective_values(val)
        cid = self.add_candidate(parent, path, value, val.scores, changes=changes)
        better = self.beats_best(val.score, values)
        reason = "beats best" if better else worse.format(score=val.score)
        if values:
            entry = {**entry, "objectives": values}
            if not better and self.rule is not None:
                shown = ", ".join(f"{name} {v:g}" for name, v in values.items())
                reason = f"not better by {self.rule!r}: {shown}"
        self.record(
            {
                "candidate": cid,
                "parent": parent,
                "path": path,
                "value": value,
                **entry,
                "val_score": val.score,
                "val_scores": val.scores,
                "accepted": better,
                "reason": reason,
            },
            accepted_candidate=cid if better else None,
        )
        return better

    def beats_best(self, score: float, values: dict[str, float]) -> bool:
        """Whether a candidate scoring `score` (with objective `values`) is better than the
        best so far: by the rule when objectives were declared, else by score."""
        best = self.objective_values.get(self.best_id)
        if self.rule is None or not values or best is None:
            return score > self.best_score
        return self.rule.key(values, self.directions) > self.rule.key(best, self.directions)

    def frontier(self) -> list[FrontierPoint]:
        """The validated candidates no other beats on every objective (the score alone in a
        single-metric fit), the kept one marked `chosen`."""
        directions = self.directions or {"score": "higher"}
        points = self.objective_values or {
            cid: {"score": sum(s) / len(s) if s else 0.0} for cid, s in self.val_scores.items()
        }
        return [
            FrontierPoint(
                cid,
                dict(points[cid]),
                {path: copy_value(v) for path, v in self.candidates[cid].items()},
                cid == self.best_id,
            )
            for cid in non_dominated(points, directions)
            if cid in self.candidates
        ]

    def start(self, scores: list[float], objectives: dict[str, float] | None = None) -> None:
        self.candidates[0] = self.snapshot()
        self.val_scores[0] = list(scores)
        self.front.add(0, scores)
        self.baseline_score = self.best_score = sum(scores) / len(scores)
        declared = {"objectives": objectives, "better": self.directions} if objectives else {}
        self.record(
            {
                "candidate": 0,
                "parent": None,
                "path": None,
                "value": None,
                "values": self.candidates[0],
                "val_score": self.best_score,
                "val_scores": scores,
                **declared,
                "accepted": True,
                "reason": "baseline",
            },
            accepted_candidate=0,
        )

    def _check_objectives(self, where: Path, baseline: dict[str, Any]) -> None:
        recorded = baseline.get("better") or {}
        if recorded != self.directions:
            raise OptimizationError(
                f"{where} was trained on {_declared(recorded)}; this run declares "
                f"{_declared(self.directions)}. Resume with the same objectives, or use another "
                "checkpoint_dir."
            )

    # --- checkpoint folder ----------------------------------------------------------------

    @property
    def best_path(self) -> Path | None:
        return None if self.checkpoint_dir is None else self.checkpoint_dir / BEST

    def save(self, *, best_changed: bool) -> None:
        if self.checkpoint_dir is None:
            return
        try:
            self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OptimizationError(
                f"Cannot create checkpoint_dir {str(self.checkpoint_dir)!r}: "
                f"{exc.strerror or exc}. Pass a folder that can be created and written."
            ) from None
        if best_changed:
            current = self.snapshot()
            self.load_best()
            try:
                self.module.save(self.checkpoint_dir / BEST, keep_comments=False)
            finally:
                for path, value in current.items():
                    self.params[path].value = value
        lines = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in self.history)
        try:
            atomic_write_bytes(self.checkpoint_dir / HISTORY, lines.encode("utf-8"))
        except OSError as exc:
            raise OptimizationError(
                f"Cannot write {self.checkpoint_dir / HISTORY}: {exc.strerror or exc}."
            ) from None

    def resume(self) -> bool:
        """Continue a run saved in `checkpoint_dir`; False when there is none to continue."""
        if self.checkpoint_dir is None or not (self.checkpoint_dir / HISTORY).is_file():
            return False
        where = self.checkpoint_dir / HISTORY
        history = []
        for number, line in enumerate(where.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    history.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise OptimizationError(
                        f"{where} line {number} is not JSON ({exc.msg}); it was not written by "
                        "fit, or was edited. Fix or remove that line, or start a new run."
                    ) from None
        if not history:
            return False
        recorded = {
            p
            for e in history
            for p in (e.get("values") or e.get("changes") or {e.get("path"): 0})
            if p
        }
        unknown = sorted(recorded - set(self.params))
        if unknown or history[0].get("reason") != "baseline":
            raise OptimizationError(
                f"{where} does not belong to this module and optimizer: it trains "
                f"{', '.join(unknown) or 'from no baseline'}, this run trains "
                f"{', '.join(self.params)}. Resume with the same module and optimizer, or use "
                "another checkpoint_dir."
            )
        self._check_objectives(where, history[0])
        for entry in history:
            cid = entry.get("candidate")
            if cid is not None and "objectives" in entry:
                self.objective_values[cid] = dict(entry["objectives"])
            if entry.get("reason") == "baseline":
                self.candidates[0] = dict(entry["values"])
            elif cid is not None:
                self.candidates[cid] = dict(self.candidates[entry["parent"]])
                changed = entry.get("changes") or {entry["path"]: entry["value"]}
                self.candidates[cid].update(changed)
            if cid is not None:
                self.val_scores[cid] = list(entry["val_scores"])
                self.front.add(cid, entry["val_scores"])
            if entry["accepted"]:
                self.best_id, self.best_score = cid, entry["val_score"]
        self.history = history
        self.baseline_score = history[0]["val_score"]
        self.evaluator.calls = history[-1]["calls"]
        from ..dto import Usage

        self.evaluator.usage = Usage(total_tokens=history[-1].get("tokens", 0))
        self.load_best()
        return True


def _declared(directions: dict[str, str]) -> str:
    shown = ", ".join(f"{name} ({better} better)" for name, better in directions.items())
    return shown or "one metric"
