"""Budgets: a limit on the tokens or the cost of everything run inside a block.

    with pm.budget(max_tokens=50_000):
        await agent(task)      # raises BudgetExceeded once 50k tokens are used

The check runs before each LLM or embedding request is sent: once the limit is reached, the next
request raises `BudgetExceeded` instead of going out. A request already sent finishes and is
counted, so the spend may end above the limit by at most one request's usage.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..argument_checks import finite_number, positive_int
from ..errors import BudgetExceeded, InvalidArgument
from .pricing import Pricing
from .provider_calls import ProviderCall
from .usage import UsageReport, collecting

__all__ = ["Budget", "budget"]


class Budget:
    """The spend of a `budget(...)` block so far: `tokens`, `cost`, `usage` (a `UsageReport`)."""

    def __init__(
        self, max_tokens: int | None, max_cost: float | None, pricing: Pricing | None
    ) -> None:
        if max_tokens is None and max_cost is None:
            raise InvalidArgument("budget() needs max_tokens, max_cost or both.")
        if max_tokens is not None:
            max_tokens = positive_int(max_tokens, "budget(max_tokens=...)")
        if max_cost is not None:
            max_cost = finite_number(max_cost, "budget(max_cost=...)", positive=True)
        if max_cost is not None and pricing is None:
            raise InvalidArgument(
                "budget(max_cost=...) needs pricing={model: (input, output[, cached_input])} "
                "per million tokens, to know what each request costs."
            )
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self.usage = UsageReport(pricing)

    @property
    def tokens(self) -> int:
        return self.usage.total.total_tokens

    @property
    def cost(self) -> float | None:
        return self.usage.cost

    def before(self, call: ProviderCall) -> None:
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            raise BudgetExceeded(
                f"Token budget reached: {self.tokens} of {self.max_tokens} tokens used; the "
                f"{call.kind} request for {call.model!r} was not sent. Raise max_tokens or "
                "shorten the task."
            )
        if self.max_cost is not None:
            pricing = self.usage.pricing or {}
            # a fallback chain may be served by any of its models: each needs a price
            models = getattr(call.provider, "model_names", None) or (call.model,)
            unpriced = [model for model in models if model not in pricing]
            if unpriced:
                raise BudgetExceeded(
                    f"The model {unpriced[0]!r} has no price in the budget's pricing table, so "
                    "its cost cannot be limited; the request was not sent. Add it to pricing."
                )
            spent = self.cost or 0.0
            if spent >= self.max_cost:
                raise BudgetExceeded(
                    f"Cost budget reached: {spent:.6f} of {self.max_cost} spent; the "
                    f"{call.kind} request for {call.model!r} was not sent. Raise max_cost."
                )

    def after(self, path: str, call: ProviderCall) -> None:
        self.usage.after(path, call)

    def __repr__(self) -> str:
        return f"Budget(tokens={self.tokens}/{self.max_tokens}, cost={self.cost}/{self.max_cost})"


@contextmanager
def budget(
    max_tokens: int | None = None,
    max_cost: float | None = None,
    pricing: Pricing | None = None,
) -> Iterator[Budget]:
    """Limit the tokens and/or the cost of every LLM and embedding call made inside the block
    (concurrent tasks started inside it included). See the module docstring."""
    spend = Budget(max_tokens, max_cost, pricing)
    with collecting(spend):
        yield spend
