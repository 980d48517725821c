"""``ScriptedLLM``: an in-process LLM that replays scripted replies and records what it was sent."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeAlias

from promptimus.dto import (
    Message,
    MessageDelta,
    MessageRole,
    ToolCallDelta,
    ToolFunction,
    ToolRequest,
    Usage,
)
from promptimus.errors import ScriptExhausted

ReplyValue: TypeAlias = Message | str
ReplyFn: TypeAlias = Callable[[list[Message], dict[str, Any]], ReplyValue | Awaitable[ReplyValue]]
Reply: TypeAlias = ReplyValue | ReplyFn | BaseException

_WORDS = re.compile(r"\S+\s*|\s+")
_call_ids = itertools.count(1)


def _new_call_id() -> str:
    return f"call_{next(_call_ids)}"


def _count_words(text: str) -> int:
    return len(text.split())


def estimate_usage(history: Sequence[Message], reply: Message) -> Usage:
    """A deterministic stand-in for token counts: one token per whitespace-separated word."""
    prompt = sum(_count_words(m.content) for m in history)
    completion = _count_words(reply.content) + _count_words(reply.reasoning or "")
    for call in reply.tool_calls or ():
        completion += 1 + _count_words(call.function.arguments)
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        reasoning_tokens=_count_words(reply.reasoning or ""),
    )


def split_message(message: Message) -> list[MessageDelta]:
    """Deltas that accumulate back to `message`: reasoning words, the thinking blocks, text
    words, tool-call fragments (name and provider data first, arguments in two halves), then
    finish_reason, usage and model_name."""
    deltas = [MessageDelta(reasoning=piece) for piece in _WORDS.findall(message.reasoning or "")]
    if message.thinking:  # the blocks a provider needs back, whole
        deltas.append(MessageDelta(thinking=list(message.thinking)))
    if message.hosted_calls:  # the calls the provider's server ran, whole
        deltas.append(MessageDelta(hosted_calls=list(message.hosted_calls)))
    deltas.extend(MessageDelta(content=piece) for piece in _WORDS.findall(message.content))
    for index, call in enumerate(message.tool_calls or ()):
        arguments = call.function.arguments
        half = len(arguments) // 2
        deltas.append(
            MessageDelta(
                tool_calls=[
                    ToolCallDelta(
                        index=index,
                        id=call.id,
                        name=call.function.name,
                        arguments=arguments[:half],
                        extra_content=call.extra_content,
                    )
                ]
            )
        )
        deltas.append(
            MessageDelta(tool_calls=[ToolCallDelta(index=index, arguments=arguments[half:])])
        )
    deltas.append(
        MessageDelta(
            usage=message.usage,
            finish_reason=message.finish_reason,
            model_name=message.model_name,
            response_id=message.response_id,
        )
    )
    return deltas


class ScriptedLLM:
    """Replays ``replies`` in order, one per call, or computes every reply with a function.

    A reply is a ``str`` (assistant text), a ``Message`` (tool calls, reasoning, usage...), a
    function ``(history, kwargs) -> Message | str`` (sync or async), or an exception to raise.
    Every request is recorded in ``requests`` as ``(history copy, kwargs)``. Replies get
    ``finish_reason`` ("tool_calls" or "stop"), ids for tool calls that lack one, an
    estimated ``usage`` (one token per word) and ``model_name`` (this LLM's) unless scripted.
    ``astream`` streams the same reply ``achat`` would give, split into small deltas.
    """

    def __init__(
        self,
        replies: Sequence[Reply] | ReplyFn = (),
        model_name: str = "scripted",
        *,
        delay: float = 0.0,
    ) -> None:
        self.model_name = model_name
        self.delay = delay
        if callable(replies):
            self._fn: ReplyFn | None = replies
            self._script: list[Reply] = []
        else:
            self._fn = None
            self._script = list(replies)
        self._position = 0
        self.requests: list[tuple[list[Message], dict[str, Any]]] = []

    # --- building replies ------------------------------------------------------------------

    @staticmethod
    def call(
        name: str, args: dict[str, Any] | str | None = None, id: str | None = None
    ) -> ToolRequest:
        """One tool request; ``args`` may be a dict (JSON-encoded) or raw (even invalid) JSON."""
        arguments = args if isinstance(args, str) else json.dumps(args or {})
        return ToolRequest(
            id=id or _new_call_id(), function=ToolFunction(name=name, arguments=arguments)
        )

    @classmethod
    def tool_call(
        cls,
        name: str,
        args: dict[str, Any] | str | None = None,
        id: str | None = None,
        *,
        content: str = "",
        reasoning: str | None = None,
    ) -> Message:
        """An assistant reply asking for one tool call."""
        return Message(
            role=MessageRole.ASSISTANT,
            content=content,
            reasoning=reasoning,
            tool_calls=[cls.call(name, args, id)],
        )

    @classmethod
    def tool_calls(
        cls, *calls: ToolRequest | tuple[str, dict[str, Any]], content: str = ""
    ) -> Message:
        """An assistant reply asking for several tool calls: ``tool_calls(("a", {...}), ...)``."""
        requests = [c if isinstance(c, ToolRequest) else cls.call(*c) for c in calls]
        return Message(role=MessageRole.ASSISTANT, content=content, tool_calls=requests)

    # --- introspection -----------------------------------------------------------------------

    @property
    def calls(self) -> list[tuple[list[Message], dict[str, Any]]]:
        return self.requests

    @property
    def remaining(self) -> int | None:
        """Scripted replies not yet used (``None`` in function mode)."""
        return None if self._fn is not None else len(self._script) - self._position

    def __repr__(self) -> str:
        mode = "fn" if self._fn is not None else f"{len(self._script)} replies"
        return f"ScriptedLLM(model_name={self.model_name!r}, {mode}, used={len(self.requests)})"

    # --- answering ---------------------------------------------------------------------------

    async def _reply(self, history: list[Message], kwargs: dict[str, Any]) -> Message:
        # Suspend once per call, as a real provider's network I/O would: otherwise a runaway loop
        # of scripted calls never gives the event loop a turn, and no timeout or cancel can stop it.
        await asyncio.sleep(0)
        self.requests.append(([m.model_copy() for m in history], dict(kwargs)))
        if self._fn is not None:
            reply: Reply = self._fn
        elif self._position < len(self._script):
            reply = self._script[self._position]
            self._position += 1
        else:
            n = len(self._script)
            raise ScriptExhausted(
                f"ScriptedLLM {self.model_name!r} ran out of replies: it had {n} "
                f"scripted repl{'y' if n == 1 else 'ies'} and was called {len(self.requests)} "
                "times. Add replies to the script, or check that the caller is not looping."
            )
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            value = reply(history, kwargs)
            if inspect.isawaitable(value):
                value = await value
            reply = value
        if self.delay:
            await asyncio.sleep(self.delay)
        return self._finish(history, reply)

    def _finish(self, history: list[Message], reply: Reply) -> Message:
        if isinstance(reply, str):
            message = Message(role=MessageRole.ASSISTANT, content=reply)
        elif isinstance(reply, Message):
            message = reply.model_copy()
        else:
            raise TypeError(
                f"ScriptedLLM replies must be str or Message (or a function returning one), "
                f"got {type(reply).__name__}"
            )
        if message.tool_calls and any(call.id is None for call in message.tool_calls):
            message.tool_calls = [
                call if call.id else call.model_copy(update={"id": _new_call_id()})
                for call in message.tool_calls
            ]
        if message.finish_reason is None:
            message.finish_reason = "tool_calls" if message.tool_calls else "stop"
        if message.usage is None:
            message.usage = estimate_usage(history, message)
        if message.model_name is None:
            message.model_name = self.model_name
        return message

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        return await self._reply(history, kwargs)

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        message = await self._reply(history, kwargs)
        for delta in split_message(message):
            yield delta
