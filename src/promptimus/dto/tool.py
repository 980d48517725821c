"""Tool calls as the model sends them: `ToolRequest`, `ToolFunction`, and `ToolCalls`."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, TypeAdapter


class ToolFunction(BaseModel):
    name: str
    arguments: str = "{}"
    """The arguments exactly as the model produced them: a JSON text, possibly invalid."""


class ToolRequest(BaseModel):
    id: str | None = None
    type: str = "function"
    function: ToolFunction
    extra_content: dict[str, Any] | None = None
    """What the provider attached to this call and needs back verbatim with it (Gemini's
    thought signature, under ``{"google": {"thought_signature": ...}}`` on both its native and
    its OpenAI-compatible API)."""


ToolCalls: TypeAdapter[list[ToolRequest]] = TypeAdapter(list[ToolRequest])
"""Validates and dumps a list of tool requests (`ToolCalls.validate_python([...])`)."""
