"""The import path of `Tool` and its helpers, whichever file defines them.

Importing it loads the kinds `Tool(...)` builds (`FunctionTool`, `ModuleTool`).
"""

from __future__ import annotations

from .base import Tool
from .function_tool import FunctionTool
from .handoff import SupportsHandoff, handoff_messages
from .module_tool import ModuleTool
from .results import tool_result_to_jsonable, tool_result_to_text
from .settings import (
    DEFAULT_TOOL_TIMEOUT,
    ApprovalCheck,
    check_idempotent,
    check_timeout,
    check_tool_name,
    snake_case,
)
from .sources import ToolSource, tool_items, toolset

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "ApprovalCheck",
    "FunctionTool",
    "ModuleTool",
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
