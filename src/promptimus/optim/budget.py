"""`Budget`: how many module calls (and optionally tokens) training may spend on evaluation."""

from __future__ import annotations

from dataclasses import dataclass

from ..argument_checks import positive_int


@dataclass(frozen=True)
class Budget:
    """`calls`: module calls made for evaluation, the baseline included (one per example
    evaluated); training stops before it would exceed them. `max_tokens`: optional cost limit,
    the tokens reported by evaluation and by the teacher together; training stops once they are
    spent (a call in progress finishes, so the last step may pass the limit by its own size)."""

    calls: int
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "calls", positive_int(self.calls, "Budget.calls"))
        if self.max_tokens is not None:
            max_tokens = positive_int(self.max_tokens, "Budget.max_tokens (or None)")
            object.__setattr__(self, "max_tokens", max_tokens)

    @classmethod
    def of(cls, budget: int | Budget) -> Budget:
        return budget if isinstance(budget, Budget) else cls(budget)
