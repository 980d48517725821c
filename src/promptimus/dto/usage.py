"""`Usage`: token counts of one reply (and their sum over several)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from .display import html_table


class Usage(BaseModel):
    """Token counts of one reply. `prompt_tokens` counts every input token, as OpenAI's usage
    does; `cached_tokens` are the ones of them read from the provider's prompt cache and
    `cache_write_tokens` the ones written to it (Anthropic prices both apart). `cache_hit`
    marks a reply served from a response cache (`promptimus.llms.CachedLLM`): it cost nothing,
    so every count is zero. A sum is a cache hit only when both parts were."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    cache_hit: bool = False

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cache_hit=self.cache_hit and other.cache_hit,
        )

    # --- display: `str` reads as a sentence, `repr` names the counts that are not zero --------

    def __str__(self) -> str:
        if self.cache_hit:
            return "cache hit (no tokens)"
        text = f"{self.total_tokens} tokens ({self.prompt_tokens} in, {self.completion_tokens} out"
        extras = [
            (self.cached_tokens, "cached"),
            (self.cache_write_tokens, "written to cache"),
            (self.reasoning_tokens, "reasoning"),
        ]
        text += "".join(f", {count} {what}" for count, what in extras if count)
        return text + ")"

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        shown = [(k, v) for k, v in super().__repr_args__() if v or k == "total_tokens"]
        return shown

    def _repr_html_(self) -> str:
        rows = [(name, value) for name, value in self.model_dump().items()]
        return html_table(f"Usage: {self}", ["field", "value"], rows)

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """The sum of `usages`, built once (not one intermediate `Usage` per term)."""
        prompt = completion = total = cached = written = reasoning = 0
        for usage in usages:
            prompt += usage.prompt_tokens
            completion += usage.completion_tokens
            total += usage.total_tokens
            cached += usage.cached_tokens
            written += usage.cache_write_tokens
            reasoning += usage.reasoning_tokens
        return cls(
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=total,
            cached_tokens=cached,
            cache_write_tokens=written,
            reasoning_tokens=reasoning,
        )
