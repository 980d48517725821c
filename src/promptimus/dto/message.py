"""`Message`, `MessageRole`, and `History` (a conversation as one validated list)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter

from .document import DocumentContent
from .hosted import HostedToolCall
from .image import ImageContent
from .thinking import ThinkingBlock
from .tool import ToolRequest
from .usage import Usage


class MessageRole(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Message(BaseModel):
    """One chat message. `usage`, `reasoning`, `finish_reason` and `model_name` are reply
    metadata: providers fill them in and never send them back to the API. `model_name` is the
    model that produced a reply (as the server named it), so a reply served by a fallback model
    or from a cache says which model wrote it. `thinking` is the opposite: the blocks of
    thinking the provider that wrote the reply needs back verbatim in the next request (see
    `ThinkingBlock`); `reasoning` is their readable text. `documents` are attached files
    (PDFs).

    `hosted_calls` are the tool calls a provider's server ran itself while writing the reply (a
    Responses API web search, file search or code interpreter), kept verbatim so the next
    request can send them back and the run record can show them; nothing runs locally.
    `response_id` is the id the server gave the reply (a Responses `resp_...` id), so a
    conversation the server stores can continue from it. `summary_of` marks a message that
    compaction wrote: the number of earlier messages it stands for. `context_edits` is what
    the provider's server cleared from the request before the model read it (Anthropic's
    ``context_management.applied_edits``, verbatim), None when it edited nothing."""

    role: MessageRole
    content: str = ""
    images: list[ImageContent] = Field(default_factory=list)
    documents: list[DocumentContent] = Field(default_factory=list)
    tool_calls: list[ToolRequest] | None = None
    tool_call_id: str | None = None
    reasoning: str | None = None
    thinking: list[ThinkingBlock] | None = None
    usage: Usage | None = None
    finish_reason: str | None = None
    model_name: str | None = None
    hosted_calls: list[HostedToolCall] | None = None
    response_id: str | None = None
    summary_of: int | None = None
    context_edits: list[dict[str, Any]] | None = None

    def __str__(self) -> str:
        """The message's text: ``print(reply)`` shows what the model said. ``repr`` keeps
        every field; `prettify` adds the role."""
        return self.content

    def prettify(self) -> str:
        """``"role: content"``, the one-line form the original promptimus printed."""
        return f"{self.role.value}: {self.content}"


History: TypeAdapter[list[Message]] = TypeAdapter(list[Message])
"""Validates and dumps a whole conversation: `History.validate_python(rows)`,
`History.dump_python(messages)`, `History.validate_json(text)`."""
