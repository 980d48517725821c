"""How deeply agent runs are nested inside each other.

An agent run can start another: a module tool wraps a sub-agent, a function tool awaits an agent.
A tool that (directly or not) calls its own agent recurses without end, each level making LLM
calls. Every run therefore counts its depth in a context variable — inherited by the tasks and
threads that tools run in, and independent between concurrent runs — and an agent refuses to
start a run deeper than its `max_nesting` with `AgentNestingTooDeep`. That error is the user's to
fix, not the model's: it passes through every enclosing tool call and ends the outermost run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from ..errors import AgentNestingTooDeep, InvalidArgument

__all__ = ["DEFAULT_MAX_NESTING", "agent_depth", "check_max_nesting", "nested_run"]

DEFAULT_MAX_NESTING = 8
"""How many agent runs may be nested, the outermost included, unless an agent says otherwise."""

_depth: ContextVar[int] = ContextVar("promptimus_agent_depth", default=0)


def agent_depth() -> int:
    """How many agent runs enclose the current code (0 outside any run)."""
    return _depth.get()


def check_max_nesting(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgument(f"max_nesting must be an int >= 1, got {value!r}.")
    return value


@contextlib.contextmanager
def nested_run(where: str, max_nesting: int) -> Iterator[int]:
    """Count one more run for the duration of the block; refuse one past `max_nesting`."""
    depth = _depth.get() + 1
    if depth > max_nesting:
        raise AgentNestingTooDeep(
            f"{where} would start an agent run nested {depth} deep, past its max_nesting of "
            f"{max_nesting}: agent runs are calling agent runs, usually through a tool that calls "
            "its own agent (directly or through another agent). Make the tool call something "
            "other than the agent that uses it; if the nesting is intended, pass a larger "
            "max_nesting= to the agent."
        )
    token = _depth.set(depth)
    try:
        yield depth
    finally:
        _depth.reset(token)
