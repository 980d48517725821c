"""MCP (Model Context Protocol): tools from any MCP server for promptimus agents, and
promptimus modules and tools served as an MCP server (`serve`).

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
    "MCPResultUnknown": "promptimus.errors",
    "serve": "serve",
    "serve_async": "serve",
}

if TYPE_CHECKING:
    from ..errors import MCPError as MCPError
    from ..errors import MCPResultUnknown as MCPResultUnknown
    from .mcp_tool import MCPTool as MCPTool
    from .serve import serve as serve
    from .serve import serve_async as serve_async
    from .toolset import DEFAULT_MCP_TIMEOUT as DEFAULT_MCP_TIMEOUT
    from .toolset import MCPToolset as MCPToolset

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())

__all__ = list(_LAZY)
