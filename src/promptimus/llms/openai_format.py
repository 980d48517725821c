"""Translate between promptimus messages and the OpenAI chat-completions wire format.

Only API fields are sent: ``usage``, ``reasoning``, ``finish_reason`` are reply metadata and never
go back to the server; content is a plain string unless the message carries images.
"""

from __future__ import annotations

from typing import Any

from promptimus.dto import (
    Message,
    MessageDelta,
    MessageRole,
    ToolCallDelta,
    ToolFunction,
    ToolRequest,
    Usage,
)


def message_to_openai(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role.value}
    if message.images:
        parts: list[dict[str, Any]] = []
        if message.content:
            parts.append({"type": "text", "text": message.content})
        for image in message.images:
            url: dict[str, Any] = {"url": image.url}
            if image.detail is not None:
                url["detail"] = image.detail
            parts.append({"type": "image_url", "image_url": url})
        out["content"] = parts
    elif message.tool_calls and not message.content:
        out["content"] = None
    else:
        out["content"] = message.content
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": call.type,
                "function": {"name": call.function.name, "arguments": call.function.arguments},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    return out


def messages_to_openai(history: list[Message]) -> list[dict[str, Any]]:
    return [message_to_openai(message) for message in history]


def _extra(obj: Any, *names: str) -> str | None:
    """A text field the SDK's typed model may not declare (e.g. ``reasoning_content``)."""
    extra = getattr(obj, "model_extra", None) or {}
    fields = getattr(obj, "__dict__", None) or {}  # declared fields, read without getattr's
    for name in names:  # AttributeError path (pydantic raises it for every missing name)
        value = extra.get(name)
        if value is None:
            value = fields.get(name)
        if isinstance(value, str) and value:
            return value
    return None


def usage_from_openai(usage: Any) -> Usage | None:
    if usage is None:
        return None
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return Usage(
        prompt_tokens=usage.prompt_tokens or 0,
        completion_tokens=usage.completion_tokens or 0,
        total_tokens=usage.total_tokens or 0,
        cached_tokens=(getattr(prompt_details, "cached_tokens", None) or 0),
        reasoning_tokens=(getattr(completion_details, "reasoning_tokens", None) or 0),
    )


def _tool_request(call: Any) -> ToolRequest:
    function = getattr(call, "function", None)
    if function is not None:
        name, arguments = function.name, function.arguments
    else:  # "custom" tool calls carry free-form input instead of JSON arguments
        custom = getattr(call, "custom", None)
        name, arguments = getattr(custom, "name", ""), getattr(custom, "input", "")
    return ToolRequest(
        id=call.id,
        type=getattr(call, "type", None) or "function",
        function=ToolFunction(name=name or "", arguments=arguments or "{}"),
    )


def completion_to_message(completion: Any) -> Message:
    """Map a ``ChatCompletion`` to an assistant ``Message`` (first choice)."""
    usage = usage_from_openai(getattr(completion, "usage", None))
    choices = completion.choices or []
    if not choices:
        return Message(role=MessageRole.ASSISTANT, usage=usage)
    choice = choices[0]
    msg = choice.message
    tool_calls = [_tool_request(call) for call in msg.tool_calls] if msg.tool_calls else None
    return Message(
        role=MessageRole.ASSISTANT,
        content=msg.content or "",
        tool_calls=tool_calls,
        reasoning=_extra(msg, "reasoning_content", "reasoning"),
        usage=usage,
        finish_reason=choice.finish_reason,
    )


def chunk_to_delta(chunk: Any) -> MessageDelta:
    """Map one ``ChatCompletionChunk`` to a ``MessageDelta`` (first choice)."""
    usage = usage_from_openai(getattr(chunk, "usage", None))
    choices = chunk.choices
    if not choices:
        return MessageDelta(usage=usage)
    choice = choices[0]
    delta = choice.delta
    fragments = []
    if delta is not None and delta.tool_calls:
        for call in delta.tool_calls:
            function = call.function
            fragments.append(
                ToolCallDelta(
                    index=call.index,
                    id=call.id,
                    name=function.name if function is not None else None,
                    arguments=(function.arguments or "") if function is not None else "",
                )
            )
    return MessageDelta(
        content=delta.content if delta is not None else None,
        reasoning=_extra(delta, "reasoning_content", "reasoning") if delta is not None else None,
        tool_calls=fragments,
        usage=usage,
        finish_reason=choice.finish_reason,
    )
