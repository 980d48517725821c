"""Tool calls as the model sends them: `ToolRequest`, `ToolFunction`, and `ToolCalls`."""

from __future__ import annotations

from pydantic import BaseModel, TypeAdapter


class ToolFunction(BaseModel):
    name: str
    arguments: str = "{}"
    """The arguments exactly as the model produced them: a JSON text, possibly invalid."""


class ToolRequest(BaseModel):
    id: str | None = None
    type: str = "function"
    function: ToolFunction


ToolCalls: TypeAdapter[list[ToolRequest]] = TypeAdapter(list[ToolRequest])
"""Validates and dumps a list of tool requests (`ToolCalls.validate_python([...])`)."""
