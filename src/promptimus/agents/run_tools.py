"""Tools offered to the runs of one agent beside its own, for as long as a block lasts: tools
a client declares for its run (the AG-UI face's front-end tools), which exist only while that
client's request does.

    with offering(agent, [tool]):
        async for event in agent.stream("..."):   # the run, and its resumes, may call `tool`
            ...

The offer reaches the runs started inside the block (and the tasks they start), and only
`agent`'s own calls: an agent nested in such a run does not see it. The agent's own tools win
over an offered tool of the same name; a paused run's fit (`RunState`) counts only the agent's
own tools.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..tools.tool import Tool

__all__ = ["offered_tools", "offering"]

_offered: contextvars.ContextVar[tuple[Any, tuple[Tool, ...]] | None] = contextvars.ContextVar(
    "promptimus_offered_tools", default=None
)


@contextmanager
def offering(agent: Any, tools: Iterable[Tool]) -> Iterator[None]:
    """Offer `tools` to `agent`'s runs started inside the block."""
    token = _offered.set((agent, tuple(tools)))
    try:
        yield
    finally:
        _offered.reset(token)


def offered_tools(agent: Any) -> tuple[Tool, ...]:
    """The tools offered to `agent` here (none outside an `offering` block for it)."""
    offer = _offered.get()
    if offer is None or offer[0] is not agent:
        return ()
    return offer[1]
