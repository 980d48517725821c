"""Where an agent's tools come from: functions, modules and tools, and tool sources (an MCP
server's toolset) that stand for several tools and are read afresh at every step."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol, runtime_checkable

from ..core import Module
from ..errors import DuplicateToolName
from .base import Tool
from .function_tool import FunctionTool
from .module_tool import ModuleTool

__all__ = ["ToolSource", "tool_items", "toolset"]


@runtime_checkable
class ToolSource(Protocol):
    """Something that stands for several tools wherever tools are taken (an MCP server's
    toolset): `toolset()` expands it into the `Tool`s it returns."""

    def expand_tools(self) -> Iterable[Tool]: ...


def tool_items(
    tools: Iterable[Tool | Module | Callable[..., Any] | ToolSource],
) -> list[Tool | ToolSource]:
    """Each item as a `Tool` (plain functions become `Tool(fn)`, modules
    `Tool.from_module(module)`), a `ToolSource` (an MCP toolset) kept as it is: what an agent
    keeps to read its sources again without making its local tools anew."""
    out: list[Tool | ToolSource] = []
    for item in tools:
        if isinstance(item, Tool | ToolSource):
            out.append(item)
        elif isinstance(item, Module):
            out.append(ModuleTool.from_module(item))
        else:
            out.append(FunctionTool(item))
    return out


def toolset(tools: Iterable[Tool | Module | Callable[..., Any] | ToolSource]) -> dict[str, Tool]:
    """Name -> Tool, refusing two tools with the same name. Plain functions become `Tool(fn)`,
    modules `Tool.from_module(module)`, and a `ToolSource` (an MCP toolset) its tools."""
    out: dict[str, Tool] = {}
    for item in tool_items(tools):
        expanded = [item] if isinstance(item, Tool) else list(item.expand_tools())
        for tool in expanded:
            if tool.name in out:
                raise DuplicateToolName(
                    f"Two tools are named {tool.name!r} ({out[tool.name].origin} and "
                    f"{tool.origin}). Tool names must be unique: give one a distinct name, "
                    "e.g. Tool.from_module(module, name='...'), Tool(fn, name='...') or an MCP "
                    "toolset's prefix='...'."
                )
            out[tool.name] = tool
    return out
