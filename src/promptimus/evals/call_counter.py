"""`CallCounter`: counts the module calls evaluations make, and optionally caps them.

An optimizer passes one counter to every `evaluate` it runs, so `counter.calls` is what training
has spent and `max_calls` its budget. An evaluation reserves one call per example before it
starts, and refuses (`CallBudgetExceeded`) without calling anything when they would not fit —
so a budget is never exceeded and never half spent on an evaluation that cannot finish.
"""

from __future__ import annotations

from ..argument_checks import non_negative_int
from ..errors import CallBudgetExceeded

__all__ = ["CallCounter"]


class CallCounter:
    def __init__(self, max_calls: int | None = None) -> None:
        if max_calls is not None:
            max_calls = non_negative_int(max_calls, "max_calls (or None)")
        self.max_calls = max_calls
        self.calls = 0

    @property
    def remaining(self) -> int | None:
        """Calls still allowed (None: no cap)."""
        return None if self.max_calls is None else self.max_calls - self.calls

    def fits(self, n: int) -> bool:
        remaining = self.remaining
        return remaining is None or n <= remaining

    def check(self, n: int) -> None:
        """Raise `CallBudgetExceeded` when `n` more calls would not fit; count nothing."""
        if not self.fits(n):
            raise CallBudgetExceeded(
                f"This evaluation needs {n} module calls, but the call budget has "
                f"{self.remaining} of {self.max_calls} left ({self.calls} made). Evaluate fewer "
                "examples, or raise max_calls."
            )

    def reserve(self, n: int) -> None:
        """Count `n` calls about to be made, or raise `CallBudgetExceeded` counting none."""
        self.check(n)
        self.calls += n

    def __repr__(self) -> str:
        return f"CallCounter(calls={self.calls}, max_calls={self.max_calls})"
