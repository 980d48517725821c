"""Where a conversation may be cut: its turns, the part compaction may change, and the tool
call each tool result answers.

A turn starts at a user message (a compaction summary is not one); an assistant message that
calls tools and the tool results answering it lie inside one turn, so a cut at a turn's start
never separates a call from its results, nor thinking from the tool use it led to.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...dto import Message, MessageRole

__all__ = ["protected_start", "tool_names_by_call", "turn_starts"]


def turn_starts(messages: Sequence[Message]) -> list[int]:
    """The index of each turn's first message: every user message but a summary."""
    return [
        index
        for index, message in enumerate(messages)
        if message.role == MessageRole.USER and message.summary_of is None
    ]


def protected_start(messages: Sequence[Message], keep_last: int) -> int:
    """Where the last `keep_last` turns begin: compaction changes nothing from there on (0 when
    the conversation has no more turns than that)."""
    starts = turn_starts(messages)
    if len(starts) <= keep_last:
        return 0
    return starts[-keep_last]


def tool_names_by_call(messages: Sequence[Message]) -> dict[str, str]:
    """The tool each call id named, over every assistant message of `messages`."""
    names: dict[str, str] = {}
    for message in messages:
        for call in message.tool_calls or ():
            if call.id is not None:
                names[call.id] = call.function.name
    return names
