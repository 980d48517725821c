"""Handing the conversation to a sub-agent used as a tool (`Tool.from_module(agent,
handoff_history=True)`): what it sees of its parent's conversation."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from ..dto import Message, MessageRole

__all__ = ["SupportsHandoff", "handoff_messages"]


@runtime_checkable
class SupportsHandoff(Protocol):
    """A module that can take the conversation so far as its input (the original promptimus'
    protocol for `Tool.from_module(module, handoff_history=True)`). For `Tool` the forward's
    message parameter must accept `list[Message]`, as every agent's `request` does."""

    async def forward(self, history: list[Message] | Message | str, **kwargs: Any) -> Any: ...


def handoff_messages(messages: Iterable[Message], include_tool_loop: bool) -> list[Message]:
    """The parent's conversation as a sub-agent should see it.

    System messages are dropped (the sub-agent has its own). Without the tool loop, tool results
    and tool-call requests are dropped (an assistant message keeps its text, if any). With it,
    tool calls that have no result yet — the call being made right now — are removed, since an
    API refuses a tool call without an answer.
    """
    messages = [m for m in messages if m.role != MessageRole.SYSTEM]
    answered = {m.tool_call_id for m in messages if m.role == MessageRole.TOOL}
    out: list[Message] = []
    for message in messages:
        if message.role == MessageRole.TOOL:
            if include_tool_loop:
                out.append(message)
            continue
        if message.role == MessageRole.ASSISTANT and message.tool_calls:
            calls = [c for c in message.tool_calls if c.id in answered] if include_tool_loop else []
            if calls:
                out.append(message.model_copy(update={"tool_calls": calls}))
            elif message.content:
                out.append(message.model_copy(update={"tool_calls": None}))
            continue
        out.append(message)
    return out
