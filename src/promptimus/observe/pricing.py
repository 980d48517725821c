"""Prices per model, and the cost of a request's usage.

A pricing table maps a model name to `(input, output)`, `(input, output, cached_input)` or
`(input, output, cached_input, cache_write)` prices in currency units per million tokens
(cached input and cache writes default to the input price):

    PRICING = {
        "gpt-4o-mini": (0.15, 0.60, 0.075),
        "claude-sonnet-4-5": (3.0, 15.0, 0.30, 3.75),  # cache reads 0.1x, 5-minute writes 1.25x
        "text-embedding-3-small": (0.02, 0.0),
    }

Input tokens are priced by kind: `Usage.cached_tokens` (read from the provider's prompt cache)
at the cached-input price, `Usage.cache_write_tokens` (written to it) at the cache-write price,
the rest of `Usage.prompt_tokens` at the input price.

A model missing from the table has an unknown cost (None), never zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeAlias

from ..argument_checks import finite_number
from ..dto import Usage
from ..errors import InvalidArgument

__all__ = ["ModelPrice", "Price", "Pricing", "check_pricing", "cost_of", "prompt_cost"]

Price: TypeAlias = (
    tuple[float, float] | tuple[float, float, float] | tuple[float, float, float, float]
)
Pricing: TypeAlias = Mapping[str, Price]


class ModelPrice(tuple[float, float, float]):
    """One model's checked prices: the tuple `(input, output, cached_input)`, with the price
    of cache writes as `cache_write` (the input price unless the table gave one)."""

    cache_write: float

    def __new__(
        cls, input_price: float, output: float, cached: float, cache_write: float
    ) -> ModelPrice:
        price = super().__new__(cls, (input_price, output, cached))
        price.cache_write = cache_write
        return price

    def __getnewargs__(self) -> tuple[float, float, float, float]:
        return (self[0], self[1], self[2], self.cache_write)


def check_pricing(pricing: Pricing | None) -> dict[str, ModelPrice] | None:
    """The table with every price as a `ModelPrice`; bad entries raise."""
    if pricing is None:
        return None
    if not isinstance(pricing, Mapping):
        raise InvalidArgument(
            "pricing must be a dict {model: (input, output[, cached_input[, cache_write]])} "
            f"in units per million tokens, got {type(pricing).__name__}."
        )
    table: dict[str, ModelPrice] = {}
    parts = ("input", "output", "cached input", "cache write")
    for model, price in pricing.items():
        if not isinstance(price, tuple | list) or len(price) not in (2, 3, 4):
            raise InvalidArgument(
                f"pricing[{model!r}] must be (input, output), (input, output, cached_input) or "
                f"(input, output, cached_input, cache_write) per million tokens, got {price!r}."
            )
        values = [
            finite_number(value, f"pricing[{model!r}] {part} price per million tokens")
            for value, part in zip(price, parts, strict=False)
        ]
        values += [values[0]] * (4 - len(values))
        table[str(model)] = ModelPrice(*values)
    return table


def prompt_cost(price: tuple[float, float, float], usage: Usage) -> float:
    """What the input tokens of `usage` cost at `price` (a `ModelPrice`; a plain tuple prices
    cache writes as input), in currency units."""
    input_price, _, cached_price = price
    write_price = getattr(price, "cache_write", input_price)
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    written = min(usage.cache_write_tokens, usage.prompt_tokens - cached)
    fresh = usage.prompt_tokens - cached - written
    return (fresh * input_price + cached * cached_price + written * write_price) / 1_000_000


def cost_of(
    table: Mapping[str, tuple[float, float, float]] | None, model: str | None, usage: Usage
) -> float | None:
    """What `usage` cost with `model`, or None when the table has no price for it."""
    if table is None or model is None:
        return None
    price = table.get(model)
    if price is None:
        return None
    return prompt_cost(price, usage) + usage.completion_tokens * price[1] / 1_000_000
