"""How an agent run started inside a tool call streams through the run that called the tool.

An agent used as a tool (a module tool, or a function tool that awaits an agent) runs inside its
caller's tool call. When someone streams the caller, the nested run streams too: each of its
events reaches the caller's stream wrapped in a `SubAgentEvent` with the nested agent's path
(wrapped again at each level further out). Its `FinalResult` and `NeedsApproval` stay its own:
the caller sees the answer as its tool call's result, and a pause as the tool call's outcome.
Nobody streaming the caller, the nested run runs as it would alone.
"""

from __future__ import annotations

from collections.abc import Callable

from ..tools.run_context import current_tool_call
from .events import AgentEvent, FinalResult, NeedsApproval

__all__ = ["relayed"]

Emit = Callable[[AgentEvent], object]


def relayed(path: str, emit: Emit | None) -> Emit | None:
    """`emit` for a run of the agent at `path`, also showing its events to the stream of the
    run whose tool call it runs in (if someone streams that run)."""
    ctx = current_tool_call()
    if ctx is None:
        return emit
    listener = ctx.listener
    if listener is None or not listener.streaming:
        return emit

    def show(event: AgentEvent) -> None:
        if not isinstance(event, FinalResult | NeedsApproval):
            listener.nested(ctx, path, event)
        if emit is not None:
            emit(event)

    return show
