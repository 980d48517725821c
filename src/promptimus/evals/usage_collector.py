"""Usage per evaluated example: the requests and tokens of the LLM calls a module call made.

A collector is one more sink on `promptimus.observe.usage`, the aggregate `track_usage` and
budgets read, so it counts what they count: every LLM call made in this context inside the
block — through a `Prompt`, a structured output, an agent's run, streamed or not, or a module's
own `provider_call` — with the usage its provider reported. `requests` are HTTP requests, as in
`track_usage`: a retried request counts each attempt, a reply served by a response cache none.
Embedding and rerank calls are not LLM usage and are left out. Collectors are per context, so
concurrent examples each see only their own calls; a collector opened inside another feeds both.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from ..dto import Message, Usage
from ..observe.provider_calls import ProviderCall
from ..observe.usage import collecting as collecting_calls

__all__ = ["UsageTotals", "collecting"]


@dataclass
class UsageTotals:
    """Requests and tokens, summed."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def add_reply(self, reply: Message) -> None:
        """Count one request that returned `reply`, with the reply's usage."""
        self.add_usage(1, reply.usage)

    def add_usage(self, requests: int, usage: Usage | None) -> None:
        """Count `requests` requests that used `usage` together."""
        self.requests += requests
        if usage is None:
            return
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.total_tokens += usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
        self.cached_tokens += usage.cached_tokens
        self.reasoning_tokens += usage.reasoning_tokens

    def add(self, other: UsageTotals) -> None:
        """Add `other`'s counts to these, in place."""
        for key, value in asdict(other).items():
            setattr(self, key, getattr(self, key) + value)

    def __add__(self, other: UsageTotals) -> UsageTotals:
        if not isinstance(other, UsageTotals):
            return NotImplemented
        mine, theirs = asdict(self), asdict(other)
        return UsageTotals(**{key: mine[key] + theirs[key] for key in mine})

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


class _Sink:
    """Adds each finished LLM call of its context to one `UsageTotals`."""

    __slots__ = ("totals",)

    def __init__(self, totals: UsageTotals) -> None:
        self.totals = totals

    def before(self, call: ProviderCall) -> None:
        pass

    def after(self, path: str, call: ProviderCall) -> None:
        if call.kind == "llm":
            self.totals.add_usage(call.request_count, call.usage)


@contextmanager
def collecting() -> Iterator[UsageTotals]:
    """Sum the usage of every LLM call made in this context inside the block."""
    totals = UsageTotals()
    with collecting_calls(_Sink(totals)):
        yield totals
