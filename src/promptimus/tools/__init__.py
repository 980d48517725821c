"""Tools: the `Tool` base and its kinds (functions, modules, composites; MCP tools live in
`promptimus.mcp`), schemas from signatures, tool sources, run context."""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "Tool": "tool",
    "FunctionTool": "tool",
    "ModuleTool": "tool",
    "SupportsHandoff": "tool",
    "ToolSource": "tool",
    "toolset": "tool",
    "tool_result_to_text": "tool",
    "handoff_messages": "tool",
    "CompositeTool": "composite_tool",
    "RunContext": "run_context",
    "HostedTool": "hosted",
}

if TYPE_CHECKING:
    from .composite_tool import CompositeTool as CompositeTool
    from .hosted import HostedTool as HostedTool
    from .run_context import RunContext as RunContext
    from .tool import FunctionTool as FunctionTool
    from .tool import ModuleTool as ModuleTool
    from .tool import SupportsHandoff as SupportsHandoff
    from .tool import Tool as Tool
    from .tool import ToolSource as ToolSource
    from .tool import handoff_messages as handoff_messages
    from .tool import tool_result_to_text as tool_result_to_text
    from .tool import toolset as toolset


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = list(_LAZY)
