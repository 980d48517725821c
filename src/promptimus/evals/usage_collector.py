"""Usage per evaluated example: requests and tokens of the LLM replies a module call produced.

How it counts: while a collector is open, a module-call interceptor (the core's seam for
observers) looks at what every `Prompt` returns — `Prompt.forward` is where `Prompt`,
`MemoryModule`, `StructuralOutput`, `RAGModule` and the (non-streaming) agents send their
requests — and adds the reply's `Message.usage` to the collector of the current context. The
collector is a context variable, so concurrent examples each see only their own replies.

What it does not see: a module that calls `llm.achat` itself rather than through a `Prompt`,
and streamed agent runs (`agent.stream`). When `promptimus.track_usage` (the provider-call seam
of `promptimus.tracing`) is on main, `collecting()` is the one place to swap for it; its
`total` carries the same fields.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from ..core.hooks import CallNext, RemovableHandle, register_module_call_interceptor
from ..dto import Message

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
        self.requests += 1
        usage = reply.usage
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


_current: contextvars.ContextVar[UsageTotals | None] = contextvars.ContextVar(
    "promptimus_eval_usage", default=None
)
_lock = threading.Lock()
_users = 0
_handle: RemovableHandle | None = None


async def _count_replies(module: Any, call_next: CallNext, args: Any, kwargs: Any) -> Any:
    output = await call_next(args, kwargs)
    totals = _current.get()
    if totals is not None and isinstance(output, Message) and _is_prompt(module):
        totals.add_reply(output)
    return output


def _is_prompt(module: Any) -> bool:
    from ..agents.dynamic_prompt import DynamicPrompt
    from ..modules.prompt import Prompt

    return isinstance(module, Prompt | DynamicPrompt)


@contextmanager
def _interceptor() -> Iterator[None]:
    # Registered only while some evaluation runs: an interceptor makes every module call take the
    # slow path, so it is not left in place afterwards.
    global _users, _handle
    with _lock:
        _users += 1
        if _handle is None:
            _handle = register_module_call_interceptor(_count_replies)
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0 and _handle is not None:
                _handle.remove()
                _handle = None


@contextmanager
def collecting() -> Iterator[UsageTotals]:
    """Sum the usage of every LLM reply produced in this context inside the block."""
    totals = UsageTotals()
    with _interceptor():
        token = _current.set(totals)
        try:
            yield totals
        finally:
            _current.reset(token)
