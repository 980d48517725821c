"""`BatchSummary`: what a batch evaluation sent, and what it cost against the direct path."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..dto import Usage
from ..observe.pricing import Pricing, check_pricing, cost_of

__all__ = ["BatchSummary"]


@dataclass
class BatchSummary:
    """`EvalReport.batch` of a batch evaluation: ``rounds`` (a module whose later calls wait
    for earlier answers takes one round per call), ``batches`` sent (one per provider per
    round), ``requests`` answered through them, and their ``usage`` per model with the
    ``discount`` each provider gives (0.5: a batched token costs half). `cost` prices the
    usage at the batch rate, `direct_cost` as the same calls made directly would cost."""

    rounds: int = 0
    batches: int = 0
    requests: int = 0
    usage: dict[str, Usage] = field(default_factory=dict)
    discount: dict[str, float] = field(default_factory=dict)
    pricing: Pricing | None = None

    def add(self, model: str, usage: Usage | None, discount: float) -> None:
        """Count one request of ``model`` answered through a batch."""
        self.requests += 1
        self.discount[model] = discount
        if usage is not None:
            self.usage[model] = self.usage.get(model, Usage()) + usage

    def direct_cost(self, pricing: Pricing | None = None) -> float | None:
        """What these requests would have cost made directly (None: a model has no price)."""
        return self._priced(pricing, batched=False)

    def cost(self, pricing: Pricing | None = None) -> float | None:
        """What these requests cost at the batch price (None: a model has no price)."""
        return self._priced(pricing, batched=True)

    def _priced(self, pricing: Pricing | None, *, batched: bool) -> float | None:
        table = check_pricing(pricing if pricing is not None else self.pricing)
        if table is None:
            return None
        total = 0.0
        for model, usage in self.usage.items():
            price = cost_of(table, model, usage)
            if price is None:
                return None
            total += price * (self.discount.get(model, 1.0) if batched else 1.0)
        return total

    def __str__(self) -> str:
        rates = sorted({round(100 * value) for value in self.discount.values()})
        rate = "/".join(f"{value}%" for value in rates) or "the batch rate"
        text = (
            f"batched: {self.requests} request{'s' * (self.requests != 1)} in {self.batches} "
            f"batch{'es' * (self.batches != 1)} over {self.rounds} round"
            f"{'s' * (self.rounds != 1)}, priced at {rate} of the direct price"
        )
        cost, direct = self.cost(), self.direct_cost()
        if cost is not None and direct is not None:
            text += f" (cost {cost:.6f} against {direct:.6f} direct)"
        return text
