"""Prices per model, and the cost of a request's usage.

A pricing table maps a model name to `(input, output)` or `(input, output, cached_input)`
prices in currency units per million tokens (cached input defaults to the input price):

    PRICING = {"gpt-4o-mini": (0.15, 0.60, 0.075), "text-embedding-3-small": (0.02, 0.0)}

A model missing from the table has an unknown cost (None), never zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from ..argument_checks import finite_number
from ..dto import Usage
from ..errors import InvalidArgument

__all__ = ["Price", "Pricing", "check_pricing", "cost_of"]

Price: TypeAlias = tuple[float, float] | tuple[float, float, float]
Pricing: TypeAlias = Mapping[str, Price]


def check_pricing(pricing: Pricing | None) -> dict[str, tuple[float, float, float]] | None:
    """The table with every price as `(input, output, cached_input)`; bad entries raise."""
    if pricing is None:
        return None
    if not isinstance(pricing, Mapping):
        raise InvalidArgument(
            f"pricing must be a dict {{model: (input, output[, cached_input])}} in units per "
            f"million tokens, got {type(pricing).__name__}."
        )
    table: dict[str, tuple[float, float, float]] = {}
    for model, price in pricing.items():
        if not isinstance(price, tuple | list) or len(price) not in (2, 3):
            raise InvalidArgument(
                f"pricing[{model!r}] must be (input, output) or (input, output, cached_input) "
                f"per million tokens, got {price!r}."
            )
        values = [
            finite_number(value, f"pricing[{model!r}] {part} price per million tokens")
            for value, part in zip(price, ("input", "output", "cached input"), strict=False)
        ]
        table[str(model)] = (values[0], values[1], values[2] if len(values) == 3 else values[0])
    return table


def cost_of(
    table: Mapping[str, tuple[float, float, float]] | None, model: str | None, usage: Usage
) -> float | None:
    """What `usage` cost with `model`, or None when the table has no price for it."""
    if table is None or model is None:
        return None
    price = table.get(model)
    if price is None:
        return None
    input_price, output_price, cached_price = price
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    return (
        (usage.prompt_tokens - cached) * input_price
        + cached * cached_price
        + usage.completion_tokens * output_price
    ) / 1_000_000
