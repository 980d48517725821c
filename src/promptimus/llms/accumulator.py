"""Assemble streamed ``MessageDelta`` chunks into the final assistant ``Message``.

A stream is complete only once a delta carried a ``finish_reason``: a stream that ends without one
was cut off (the server died or closed the connection mid-reply) and ``finish`` /
``aaccumulate`` raise ``StreamInterrupted`` saying what had arrived, instead of returning the
partial (often empty) reply as if it were the answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable, Iterable
from typing import Any

from promptimus.dto import (
    HostedToolCall,
    Message,
    MessageDelta,
    MessageRole,
    ThinkingBlock,
    ToolFunction,
    ToolRequest,
    Usage,
)
from promptimus.errors import StreamInterrupted


class MessageAccumulator:
    """Feed deltas with ``add``; read the message so far with ``message()``.

    Text and reasoning concatenate, tool-call fragments concatenate by ``index``, and the last
    ``usage`` / ``finish_reason`` / ``model_name`` seen win. ``chunks`` counts the deltas added;
    ``complete`` says whether one carried a ``finish_reason``; ``finish()`` is ``message()`` for a
    stream that has ended, raising ``StreamInterrupted`` if it ended incomplete.
    """

    __slots__ = (
        "_calls",
        "_content",
        "_extras",
        "_hosted",
        "_reasoning",
        "_thinking",
        "chunks",
        "context_edits",
        "finish_reason",
        "model_name",
        "response_id",
        "usage",
    )

    def __init__(self) -> None:
        self._content: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, list[str | None]] = {}  # index -> [id, name, arguments]
        self._extras: dict[int, dict[str, Any]] = {}  # index -> the call's provider data
        self._thinking: list[ThinkingBlock] = []
        self._hosted: list[HostedToolCall] = []
        self.response_id: str | None = None
        self.context_edits: list[dict[str, Any]] | None = None
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.model_name: str | None = None
        self.chunks = 0

    def add(self, delta: MessageDelta) -> None:
        self.chunks += 1
        if delta.content:
            self._content.append(delta.content)
        if delta.reasoning:
            self._reasoning.append(delta.reasoning)
        if delta.thinking:
            self._thinking.extend(delta.thinking)
        if delta.hosted_calls:
            self._hosted.extend(delta.hosted_calls)
        if delta.response_id is not None:
            self.response_id = delta.response_id
        if delta.context_edits is not None:
            self.context_edits = delta.context_edits
        for fragment in delta.tool_calls:
            if fragment.extra_content is not None:
                self._extras[fragment.index] = fragment.extra_content
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
        if delta.model_name is not None:
            self.model_name = delta.model_name

    @property
    def content(self) -> str:
        return "".join(self._content)

    @property
    def complete(self) -> bool:
        """Whether a delta carried a ``finish_reason`` (the model finished the reply)."""
        return self.finish_reason is not None

    @property
    def tool_call_count(self) -> int:
        return len(self._calls)

    def finish(self, source: str = "an LLM call") -> Message:
        """The message of a stream that has ended; ``StreamInterrupted`` if it was cut off.

        ``source`` names the stream in the error (e.g. the provider and model)."""
        if not self.complete:
            raise stream_interrupted(self, source)
        return self.message()

    def message(self) -> Message:
        tool_calls = None
        if self._calls:
            tool_calls = [
                ToolRequest(
                    id=call_id,
                    function=ToolFunction(name=name or "", arguments=arguments or "{}"),
                    extra_content=self._extras.get(index),
                )
                for index, (call_id, name, arguments) in sorted(self._calls.items())
            ]
        return Message(
            role=MessageRole.ASSISTANT,
            content="".join(self._content),
            tool_calls=tool_calls,
            reasoning="".join(self._reasoning) if self._reasoning else None,
            thinking=list(self._thinking) if self._thinking else None,
            usage=self.usage,
            finish_reason=self.finish_reason,
            model_name=self.model_name,
            hosted_calls=list(self._hosted) if self._hosted else None,
            response_id=self.response_id,
            context_edits=self.context_edits,
        )


def accumulate(deltas: Iterable[MessageDelta]) -> Message:
    """The message a sequence of deltas adds up to."""
    acc = MessageAccumulator()
    for delta in deltas:
        acc.add(delta)
    return acc.finish()


async def aaccumulate(deltas: AsyncIterable[MessageDelta]) -> Message:
    """Consume a stream (e.g. ``llm.astream(history)``) and return the message it adds up to."""
    acc = MessageAccumulator()
    async for delta in deltas:
        acc.add(delta)
    return acc.finish()


async def aaccumulate_each(
    deltas: AsyncIterable[MessageDelta], on_delta: Callable[[MessageDelta], object], source: str
) -> Message:
    """`aaccumulate`, handing each delta to `on_delta` as it arrives; `source` names the stream
    in the error when it was cut off."""
    acc = MessageAccumulator()
    async for delta in deltas:
        acc.add(delta)
        on_delta(delta)
    return acc.finish(source)


def stream_interrupted(
    received: MessageAccumulator, source: str, cause: str | None = None
) -> StreamInterrupted:
    """The error for a stream that ended (or broke, ``cause``) before its ``finish_reason``."""
    how = f"broke ({cause})" if cause else "ended"
    return StreamInterrupted(
        f"The reply to {source} was cut off (stream interrupted): the stream {how} before "
        f"the model finished it, after {received.chunks} chunk(s) with "
        f"{len(received.content)} characters of text and {received.tool_call_count} tool "
        "call(s), none of them carrying a finish_reason. The server probably died or "
        "closed the connection mid-reply (a crash, a restart, an error such as a context "
        "overflow that some servers, like older llama.cpp builds, send in a form the openai SDK "
        "skips): check the server's log, then retry. A custom LLM's astream must end with a "
        "delta that carries finish_reason.",
        chunks=received.chunks,
        content_chars=len(received.content),
        tool_calls=received.tool_call_count,
        finish_reason=received.finish_reason,
    )
