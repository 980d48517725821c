"""`Budget`: how many module calls (and optionally tokens) training may spend on evaluation."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidArgument


@dataclass(frozen=True)
class Budget:
    """`calls`: module calls made for evaluation, the baseline included (one per example
    evaluated); training stops before it would exceed them. `max_tokens`: optional cost limit,
    the tokens reported by evaluation and by the teacher together; training stops once they are
    spent (a call in progress finishes, so the last step may pass the limit by its own size)."""

    calls: int
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.calls, bool) or not isinstance(self.calls, int) or self.calls < 1:
            raise InvalidArgument(f"Budget.calls must be a positive int, got {self.calls!r}.")
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool)
            or not isinstance(self.max_tokens, int)
            or self.max_tokens < 1
        ):
            raise InvalidArgument(
                f"Budget.max_tokens must be a positive int or None, got {self.max_tokens!r}."
            )

    @classmethod
    def of(cls, budget: int | Budget) -> Budget:
        return budget if isinstance(budget, Budget) else cls(budget)
