"""Merges: one candidate from two on the Pareto front that improved different parameters.

Two front candidates that descend from a common ancestor (neither being the other's) each
changed some parameters relative to it. Their merge starts from the ancestor and takes each
changed parameter from the candidate that changed it; a parameter both changed comes from the
one with the better validation score. A merge is tried once per pair, only when each side
brings something the other lacks, and never when it would repeat a candidate already scored.
The history tells the lineage: every candidate names its `parent`, and a merge names its two
`parents`, their `ancestor` and which parameter it `took` from which.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

__all__ = ["MergePlan", "plan_merge"]


@dataclass(frozen=True)
class MergePlan:
    """Candidate `first` (the better of the two) with `changes` taken from `second`; `took`
    names, for each parameter either changed since `ancestor`, the candidate it comes from."""

    first: int
    second: int
    ancestor: int
    took: dict[str, int]
    changes: dict[str, Any]

    def record(self) -> dict[str, Any]:
        """The history's account of it."""
        return {"parents": [self.first, self.second], "ancestor": self.ancestor, "took": self.took}


def _lineage(history: list[dict[str, Any]]) -> dict[int, int | None]:
    parents: dict[int, int | None] = {}
    for entry in history:
        cid = entry.get("candidate")
        if isinstance(cid, int):
            parent = entry.get("parent")
            parents[cid] = parent if isinstance(parent, int) else None
    return parents


def _ancestry(cid: int, parents: dict[int, int | None]) -> list[int]:
    """`cid`, its parent, its parent's parent, ... (merges follow their first parent)."""
    chain: list[int] = []
    current: int | None = cid
    while current is not None and current not in chain:
        chain.append(current)
        current = parents.get(current)
    return chain


def tried_pairs(history: list[dict[str, Any]]) -> set[frozenset[int]]:
    return {
        frozenset(entry["merge"]["parents"])
        for entry in history
        if isinstance(entry.get("merge"), dict) and len(entry["merge"].get("parents", ())) == 2
    }


def plan_merge(
    front: list[int],
    candidates: dict[int, dict[str, Any]],
    scores: dict[int, float],
    history: list[dict[str, Any]],
) -> MergePlan | None:
    """The next merge to try among `front`'s candidates (best pairs first), or None."""
    parents = _lineage(history)
    tried = tried_pairs(history)
    known = [values for values in candidates.values()]
    pairs = sorted(
        combinations(sorted(front), 2),
        key=lambda pair: (-(scores.get(pair[0], 0.0) + scores.get(pair[1], 0.0)), pair),
    )
    for a, b in pairs:
        if frozenset((a, b)) in tried:
            continue
        first, second = (a, b) if scores.get(a, 0.0) >= scores.get(b, 0.0) else (b, a)
        plan = _plan(first, second, candidates, parents)
        if plan is not None and _merged(plan, candidates) not in known:
            return plan
    return None


def _plan(
    first: int,
    second: int,
    candidates: dict[int, dict[str, Any]],
    parents: dict[int, int | None],
) -> MergePlan | None:
    theirs = _ancestry(second, parents)
    common = next((cid for cid in _ancestry(first, parents) if cid in theirs), None)
    if common is None or common in (first, second) or common not in candidates:
        return None
    base = candidates[common]
    took: dict[str, int] = {}
    for path in base:
        if candidates[first].get(path) != base[path]:
            took[path] = first  # the better one's, when both changed it
        elif candidates[second].get(path) != base[path]:
            took[path] = second
    if first not in took.values() or second not in took.values():
        return None  # one side brings nothing the other lacks
    changes = {
        path: candidates[second][path]
        for path, source in took.items()
        if source == second and candidates[second][path] != candidates[first].get(path)
    }
    if not changes:
        return None
    return MergePlan(first, second, common, took, changes)


def _merged(plan: MergePlan, candidates: dict[int, dict[str, Any]]) -> dict[str, Any]:
    return {**candidates[plan.first], **plan.changes}
