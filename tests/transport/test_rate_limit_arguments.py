"""``requests_per_minute`` / ``tokens_per_minute`` are checked where given, on every provider:
NaN (which made every call wait out a whole window), infinities, negatives, booleans and
strings are `InvalidArgument` naming the option, before any request."""

from __future__ import annotations

import math
from typing import Any

import pytest

from promptimus.embedders import OpenAILikeEmbedder
from promptimus.errors import InvalidArgument
from promptimus.llms import Anthropic, Gemini, OpenAILike
from promptimus.transport.rate_limit import RateLimiter

BAD = [math.nan, math.inf, -math.inf, -5, 0, True, "60"]

MAKERS: dict[str, Any] = {
    "openai": lambda **kw: OpenAILike("m", api_key="k", **kw),
    "anthropic": lambda **kw: Anthropic("m", api_key="k", **kw),
    "gemini": lambda **kw: Gemini("m", api_key="k", **kw),
    "embedder": lambda **kw: OpenAILikeEmbedder("m", "k", **kw),
}


@pytest.mark.parametrize("option", ["requests_per_minute", "tokens_per_minute"])
@pytest.mark.parametrize("value", BAD, ids=repr)
@pytest.mark.parametrize("provider", sorted(MAKERS))
def test_a_rate_that_is_not_a_positive_number_is_refused_where_given(
    provider: str, value: Any, option: str
) -> None:
    with pytest.raises(InvalidArgument, match=option):
        MAKERS[provider](**{option: value})


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_a_rate_limiter_refuses_the_same(value: Any) -> None:
    with pytest.raises(InvalidArgument):
        RateLimiter(value)
    with pytest.raises(InvalidArgument):
        RateLimiter(10, value)
