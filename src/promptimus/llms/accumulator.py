"""Assemble streamed ``MessageDelta`` chunks into the final assistant ``Message``."""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable

from promptimus.dto import Message, MessageDelta, MessageRole, ToolFunction, ToolRequest, Usage


class MessageAccumulator:
    """Feed deltas with ``add``; read the message so far with ``message()``.

    Text and reasoning concatenate, tool-call fragments concatenate by ``index``, and the last
    ``usage`` / ``finish_reason`` seen win.
    """

    __slots__ = ("_calls", "_content", "_reasoning", "finish_reason", "usage")

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, list[str | None]] = {}  # index -> [id, name, arguments]
        self.usage: Usage | None = None
        self.finish_reason: str | None = None

    def add(self, delta: MessageDelta) -> None:
        if delta.content:
            self._content.append(delta.content)
        if delta.reasoning:
            self._reasoning.append(delta.reasoning)
        for fragment in delta.tool_calls:
            call = self._calls.get(fragment.index)
            if call is None:
                self._calls[fragment.index] = [fragment.id, fragment.name, fragment.arguments]
                continue
            if fragment.id:
                call[0] = fragment.id
            if fragment.name and call[1] != fragment.name:
                # OpenAI sends the name once; some servers repeat it whole in every fragment.
                call[1] = (call[1] or "") + fragment.name
            if fragment.arguments:
                call[2] = (call[2] or "") + fragment.arguments
        if delta.usage is not None:
            self.usage = delta.usage
        if delta.finish_reason is not None:
            self.finish_reason = delta.finish_reason

    @property
    def content(self) -> str:
        return "".join(self._content)

    def message(self) -> Message:
        tool_calls = None
        if self._calls:
            tool_calls = [
                ToolRequest(
                    id=call_id,
                    function=ToolFunction(name=name or "", arguments=arguments or "{}"),
                )
                for call_id, name, arguments in (self._calls[i] for i in sorted(self._calls))
            ]
        return Message(
            role=MessageRole.ASSISTANT,
            content="".join(self._content),
            tool_calls=tool_calls,
            reasoning="".join(self._reasoning) if self._reasoning else None,
            usage=self.usage,
            finish_reason=self.finish_reason,
        )


def accumulate(deltas: Iterable[MessageDelta]) -> Message:
    """The message a sequence of deltas adds up to."""
    acc = MessageAccumulator()
    for delta in deltas:
        acc.add(delta)
    return acc.message()


async def aaccumulate(deltas: AsyncIterable[MessageDelta]) -> Message:
    """Consume a stream (e.g. ``llm.astream(history)``) and return the message it adds up to."""
    acc = MessageAccumulator()
    async for delta in deltas:
        acc.add(delta)
    return acc.message()
