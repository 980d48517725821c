"""MCP (Model Context Protocol): tools from any MCP server for promptimus agents.

Needs the `mcp` extra (`pip install 'promptimus[mcp]'`); `import promptimus` never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "MCPToolset": "toolset",
    "DEFAULT_MCP_TIMEOUT": "toolset",
    "MCPTool": "mcp_tool",
    "MCPError": "promptimus.errors",
}

if TYPE_CHECKING:
    from ..errors import MCPError as MCPError
    from .mcp_tool import MCPTool as MCPTool
    from .toolset import DEFAULT_MCP_TIMEOUT as DEFAULT_MCP_TIMEOUT
    from .toolset import MCPToolset as MCPToolset

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = list(_LAZY)
