"""The import path of `Tool` and its helpers, whichever file defines them."""

from __future__ import annotations

from .function_tool import Tool, ToolSource, tool_items, toolset
from .handoff import SupportsHandoff, handoff_messages
from .results import tool_result_to_jsonable, tool_result_to_text
from .settings import (
    DEFAULT_TOOL_TIMEOUT,
    check_idempotent,
    check_timeout,
    check_tool_name,
    snake_case,
)

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "SupportsHandoff",
    "Tool",
    "ToolSource",
    "check_idempotent",
    "check_timeout",
    "check_tool_name",
    "handoff_messages",
    "snake_case",
    "tool_items",
    "tool_result_to_jsonable",
    "tool_result_to_text",
    "toolset",
]
