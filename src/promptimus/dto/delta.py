"""Streamed reply fragments: `MessageDelta` and `ToolCallDelta`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from .hosted import HostedToolCall
from .thinking import ThinkingBlock
from .usage import Usage


class ToolCallDelta(BaseModel):
    """A fragment of a streamed tool call; fragments with the same `index` concatenate."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    extra_content: dict[str, Any] | None = None
    """The call's provider data (see `ToolRequest.extra_content`); the last one given wins."""


class MessageDelta(BaseModel):
    """One streamed chunk: text, reasoning, tool-call fragments, and on the last chunk usage.
    `model_name` is the model that produced the chunk, when the provider says (accumulating a
    stream keeps the last one given)."""

    content: str | None = None
    reasoning: str | None = None
    thinking: list[ThinkingBlock] = Field(default_factory=list)
    """Whole thinking blocks, each sent once it is complete (its text streams in `reasoning`)."""
    tool_calls: list[ToolCallDelta] = Field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None
    model_name: str | None = None
    hosted_calls: list[HostedToolCall] = Field(default_factory=list)
    """Whole tool calls the provider's server ran, each sent once it is complete."""
    response_id: str | None = None
    """The id the server gave the reply (see `Message.response_id`); the last one given wins."""
    context_edits: list[dict[str, Any]] | None = None
    """What the server cleared from the request (see `Message.context_edits`); the last given
    wins."""
