"""Plain data exchanged with providers: messages, tool requests, images, usage, stream deltas."""

from __future__ import annotations

import base64
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class MessageRole(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ImageContent(BaseModel):
    """An image attached to a message, as an http(s) URL or a base64 `data:` URL."""

    model_config = ConfigDict(frozen=True)

    url: str
    detail: str | None = None

    @classmethod
    def from_buffer(
        cls, data: bytes, mime_type: str = "image/png", detail: str | None = None
    ) -> ImageContent:
        encoded = base64.b64encode(data).decode("ascii")
        return cls(url=f"data:{mime_type};base64,{encoded}", detail=detail)


class ToolFunction(BaseModel):
    name: str
    arguments: str = "{}"
    """The arguments exactly as the model produced them: a JSON text, possibly invalid."""


class ToolRequest(BaseModel):
    id: str | None = None
    type: str = "function"
    function: ToolFunction


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


class Message(BaseModel):
    """One chat message. `usage`, `reasoning` and `finish_reason` are reply metadata:
    providers fill them in and never send them back to the API."""

    role: MessageRole
    content: str = ""
    images: list[ImageContent] = Field(default_factory=list)
    tool_calls: list[ToolRequest] | None = None
    tool_call_id: str | None = None
    reasoning: str | None = None
    usage: Usage | None = None
    finish_reason: str | None = None


class ToolCallDelta(BaseModel):
    """A fragment of a streamed tool call; fragments with the same `index` concatenate."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class MessageDelta(BaseModel):
    """One streamed chunk: text, reasoning, tool-call fragments, and on the last chunk usage."""

    content: str | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCallDelta] = Field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None
