"""What a test scripts into the fake Responses API: `ResponsesReply` (and the plain forms a
script also takes: a ``str`` is a text reply, a `ToolCall` a function call)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from promptimus.testing.script import ToolCall

__all__ = ["ResponsesReply"]


@dataclass(slots=True)
class ResponsesReply:
    """One response of the fake ``/v1/responses``. Its output items come in this order: one
    reasoning item per entry of ``reasoning`` (its summary, sent when the request asks for a
    summary; its encrypted content, when the request includes ``reasoning.encrypted_content``),
    the ``hosted_calls`` (items of tools the server ran: ``{"type": "web_search_call",
    "action": {...}}``; ``id`` and ``status`` are filled in), a ``message`` with ``content`` (or
    a ``refusal``), then one ``function_call`` per entry of ``tool_calls``.

    ``usage``: any of ``input_tokens``, ``cached_tokens``, ``output_tokens``,
    ``reasoning_tokens`` (missing ones are counted, one token per word). ``incomplete``:
    ``"max_output_tokens"`` or ``"content_filter"`` ends the response ``incomplete`` with that
    reason; ``failed``: an error object (``{"code": "server_error", "message": ...}``) ends it
    ``failed``. ``model`` defaults to the requested model."""

    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    reasoning: str | list[str] | None = None
    hosted_calls: list[dict[str, Any]] | None = None
    refusal: str | None = None
    usage: dict[str, int] | None = None
    incomplete: Literal["max_output_tokens", "content_filter"] | None = None
    failed: dict[str, Any] | None = None
    model: str | None = None

    @property
    def summaries(self) -> list[str]:
        if self.reasoning is None:
            return []
        return [self.reasoning] if isinstance(self.reasoning, str) else list(self.reasoning)


def coerce_responses_reply(item: Any) -> ResponsesReply:
    if isinstance(item, ResponsesReply):
        return item
    if isinstance(item, str):
        return ResponsesReply(content=item)
    if isinstance(item, ToolCall):
        return ResponsesReply(tool_calls=[item])
    raise TypeError(
        f"cannot send {type(item).__name__} as a response; script a str, ResponsesReply, "
        "ToolCall, Fault or a full response dict"
    )
