"""The Pareto front of candidates by per-example validation scores (GEPA's parent choice)."""

from __future__ import annotations

import random


class ParetoFront:
    """Candidates that are best on at least one validation example and dominated by none.
    Parents are drawn in proportion to how many examples they are best on, so a candidate that
    solved different examples than the overall best keeps a chance to be improved."""

    def __init__(self) -> None:
        self.scores: dict[int, list[float]] = {}

    def add(self, candidate: int, scores: list[float]) -> None:
        self.scores[candidate] = list(scores)

    def _wins(self) -> dict[int, int]:
        wins: dict[int, int] = {}
        if not self.scores:
            return wins
        width = min(len(s) for s in self.scores.values())
        for i in range(width):
            top = max(s[i] for s in self.scores.values())
            for cid, s in self.scores.items():
                if s[i] == top:
                    wins[cid] = wins.get(cid, 0) + 1
        return {cid: n for cid, n in wins.items() if not self._dominated(cid, wins)}

    def _dominated(self, cid: int, among: dict[int, int]) -> bool:
        mine = self.scores[cid]
        for other in among:
            theirs = self.scores[other]
            pairs = list(zip(theirs, mine, strict=False))
            if other != cid and all(t >= m for t, m in pairs) and any(t > m for t, m in pairs):
                return True
        return False

    def front(self) -> list[int]:
        return sorted(self._wins())

    def choose(self, rng: random.Random) -> int:
        wins = self._wins()
        ids = sorted(wins)
        return rng.choices(ids, weights=[wins[c] for c in ids])[0]
