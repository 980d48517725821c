"""What a test scripts into `FakeAnthropicServer`, and the Messages API payloads it sends.

A scripted item is an `AnthropicReply`, a plain ``str`` (a text reply), a `Reply` of the OpenAI
fake (its ``reasoning`` becomes one signed thinking block), a ``dict`` (sent as the body as it
is) or a `Fault`. Error bodies are Anthropic's: ``{"type": "error", "error": {"type":
"rate_limit_error", "message": ...}}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from promptimus.testing.script import Reply, ToolCall

__all__ = [
    "AnthropicReply",
    "Thinking",
    "anthropic_error",
    "coerce_anthropic_reply",
    "input_tokens",
    "message_body",
    "stream_events",
]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_MESSAGES = {
    "invalid_request_error": "fake server: the request is invalid",
    "authentication_error": "invalid x-api-key",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "The requested resource could not be found.",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "api_error": "Internal server error",
    "timeout_error": "Request timed out",
    "overloaded_error": "Overloaded",
}


def anthropic_error(status_or_type: int | str, message: str | None = None) -> dict[str, Any]:
    """An Anthropic error body for an HTTP status (529: ``overloaded_error``) or error type."""
    if isinstance(status_or_type, int):
        kind = _ERROR_TYPES.get(status_or_type, "api_error")
    else:
        kind = status_or_type
    text = message if message is not None else _MESSAGES.get(kind, "fake server error")
    return {"type": "error", "error": {"type": kind, "message": text}}


@dataclass(slots=True)
class Thinking:
    """A thinking block of a reply: its text and signature (default: one the server makes and
    later checks), or a ``redacted_thinking`` block when ``redacted`` (its encrypted data)."""

    text: str = ""
    signature: str | None = None
    redacted: str | None = None


@dataclass(slots=True)
class AnthropicReply:
    """One Messages reply. ``thinking`` comes first (a text, a `Thinking`, or a list of them),
    then the ``content`` text, then the ``tool_calls`` as ``tool_use`` blocks. ``usage`` is
    Anthropic's usage object (``input_tokens``, ``output_tokens``,
    ``cache_read_input_tokens``, ``cache_creation_input_tokens``); missing counts are computed
    (cache counts from the request's ``cache_control`` breakpoints). ``stop_reason`` defaults
    to ``tool_use`` with tool calls, else ``end_turn``; ``model`` to the requested model."""

    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    thinking: str | Thinking | list[str | Thinking] | None = None
    usage: dict[str, Any] | None = None
    stop_reason: str | None = None
    model: str | None = None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    """Filled by the server: the content blocks as sent."""


_FINISH = {"length": "max_tokens", "tool_calls": "tool_use", "stop": "end_turn"}


def coerce_anthropic_reply(item: Any) -> AnthropicReply:
    if isinstance(item, AnthropicReply):
        return AnthropicReply(
            item.content, item.tool_calls, item.thinking, item.usage, item.stop_reason, item.model
        )
    if isinstance(item, str):
        return AnthropicReply(content=item)
    if isinstance(item, Reply):
        stop = _FINISH.get(item.finish_reason or "", item.finish_reason)
        usage = item.usage if isinstance(item.usage, dict) else None
        return AnthropicReply(
            item.content, item.tool_calls, item.reasoning, usage, stop, item.model
        )
    raise TypeError(
        f"cannot answer with {type(item).__name__}: script an AnthropicReply, a str, a Reply, "
        "a dict or a Fault"
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(_text_of(block.get("content")))
    return " ".join(parts)


def _words(text: str) -> int:
    return len(text.split())


def input_tokens(body: dict[str, Any]) -> int:
    """The request's size at one token per word (system, messages, tools)."""
    count = _words(_text_of(body.get("system")))
    for message in body.get("messages") or ():
        if isinstance(message, dict):
            count += _words(_text_of(message.get("content")))
    if body.get("tools"):
        count += _words(json.dumps(body["tools"]))
    return max(count, 1)


def echo_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or ()):
        if isinstance(message, dict) and message.get("role") == "user":
            return f"echo: {_text_of(message.get('content'))}"
    return "echo: "


def _thinking_items(reply: AnthropicReply) -> list[Thinking]:
    items = reply.thinking
    if items is None:
        return []
    if not isinstance(items, list):
        items = [items]
    return [item if isinstance(item, Thinking) else Thinking(text=item) for item in items]


def build_blocks(
    reply: AnthropicReply, sign: Callable[[str], str], next_id: Callable[[], str]
) -> list[dict[str, Any]]:
    """The reply's content blocks (thinking signed by ``sign``, tool ids from ``next_id``)."""
    blocks: list[dict[str, Any]] = []
    for item in _thinking_items(reply):
        if item.redacted is not None:
            blocks.append({"type": "redacted_thinking", "data": item.redacted})
        else:
            signature = item.signature if item.signature is not None else sign(item.text)
            blocks.append({"type": "thinking", "thinking": item.text, "signature": signature})
    if reply.content:
        blocks.append({"type": "text", "text": reply.content})
    for call in reply.tool_calls or ():
        arguments = call.arguments
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
        blocks.append(
            {"type": "tool_use", "id": call.id or next_id(), "name": call.name, "input": value}
        )
    return blocks


def _output_words(blocks: list[dict[str, Any]]) -> int:
    count = 0
    for block in blocks:
        if block["type"] == "text":
            count += _words(block["text"])
        elif block["type"] == "thinking":
            count += _words(block["thinking"])
        elif block["type"] == "tool_use":
            count += _words(json.dumps(block["input"]))
    return max(count, 1)


def _usage(reply: AnthropicReply, cache: dict[str, int], body: dict[str, Any]) -> dict[str, Any]:
    given = dict(reply.usage or {})
    usage = {
        "input_tokens": given.get("input_tokens", cache["input"]),
        "cache_creation_input_tokens": given.get("cache_creation_input_tokens", cache["write"]),
        "cache_read_input_tokens": given.get("cache_read_input_tokens", cache["read"]),
        "output_tokens": given.get("output_tokens", _output_words(reply.blocks)),
    }
    return usage


def _stop_reason(reply: AnthropicReply) -> str:
    if reply.stop_reason is not None:
        return reply.stop_reason
    return "tool_use" if reply.tool_calls else "end_turn"


def message_body(
    reply: AnthropicReply, body: dict[str, Any], message_id: str, cache: dict[str, int]
) -> dict[str, Any]:
    """The JSON reply of a non-streamed request."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model or body.get("model") or "claude-fake",
        "content": reply.blocks,
        "stop_reason": _stop_reason(reply),
        "stop_sequence": None,
        "usage": _usage(reply, cache, body),
    }


_PIECE = re.compile(r"\s*\S+\s*")


def _pieces(text: str) -> list[str]:
    return _PIECE.findall(text) or [text]


def _block_events(index: int, block: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind = block["type"]
    start: dict[str, Any]
    if kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": piece} for piece in _pieces(block["thinking"])
        ]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        text = json.dumps(block["input"])
        half = len(text) // 2
        deltas = [
            {"type": "input_json_delta", "partial_json": part}
            for part in (text[:half], text[half:])
        ]
    else:  # redacted_thinking arrives whole
        start, deltas = block, []
    yield {"type": "content_block_start", "index": index, "content_block": start}
    for delta in deltas:
        yield {"type": "content_block_delta", "index": index, "delta": delta}
    yield {"type": "content_block_stop", "index": index}


def stream_events(
    reply: AnthropicReply, body: dict[str, Any], message_id: str, cache: dict[str, int]
) -> list[dict[str, Any]]:
    """The events of a streamed reply, ``message_start`` to ``message_stop``."""
    usage = _usage(reply, cache, body)
    start_usage = {**usage, "output_tokens": 1}
    message = {**message_body(reply, body, message_id, cache), "content": [], "usage": start_usage}
    message["stop_reason"] = None
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "ping"},
    ]
    for index, block in enumerate(reply.blocks):
        events.extend(_block_events(index, block))
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
            "usage": usage,
        }
    )
    events.append({"type": "message_stop"})
    return events
