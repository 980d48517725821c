"""The output judge a call runs under: what a stream inside it must wait for.

A module with output guardrails around its call (`promptimus.guardrails.Guarded`) sets a judge
for the call's duration. `StructuralOutput.stream` under one shows nothing as it streams: it
holds its partial objects, asks the judge for its final value, and yields what the judge left
(the partials then the value when allowed, the replacement alone when replaced; a block raises
the judge's error and yields nothing).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

__all__ = ["OutputJudge", "judging_output", "output_judge"]

OutputJudge = Callable[[Any], Awaitable[Any]]
"""Takes a final value and returns it as the guardrails left it, or raises their block."""

_judge: contextvars.ContextVar[OutputJudge | None] = contextvars.ContextVar(
    "promptimus_output_judge", default=None
)


def output_judge() -> OutputJudge | None:
    """The judge of the call this runs in, or None when no output guardrail is around it."""
    return _judge.get()


@contextlib.contextmanager
def judging_output(judge: OutputJudge | None) -> Iterator[None]:
    """Run the block under `judge` (None: under none, as a judge's own calls run)."""
    token = _judge.set(judge)
    try:
        yield
    finally:
        _judge.reset(token)
