"""`serve`: promptimus modules and tools as an MCP server (stdio or streamable HTTP).

    serve(my_agent)                                  # stdio, one tool named after the class
    serve([add, search], transport="http", port=8765)  # http://127.0.0.1:8765/mcp
    serve({"writer": writer, "critic": critic})      # one tool per module, named by the keys

A module becomes a tool by the same rules as `Tool.from_module` (an agent takes `request`
text); every call runs in its own `pm.Session`, so concurrent clients never share memory.
Arguments are validated as for the model's calls; a failing tool answers with `isError`. A tool
that returns a `Message` with `images` answers with its text and image content (for `data:` URLs).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

import mcp_types as types
from mcp.server.lowlevel import Server

from ..core import Module, Session
from ..dto import Message
from ..errors import MCPError, ToolError
from ..tools.tool import Tool, toolset

__all__ = ["build_server", "serve", "serve_async", "served_tools"]

_DATA_URL = re.compile(r"data:(image/[\w.+-]+);base64,(.+)", re.DOTALL)

Target = Module | Tool | Mapping[str, Module | Tool] | Iterable[Tool | Module | Callable[..., Any]]


def served_tools(target: Target) -> dict[str, Tool]:
    """Name -> Tool for what `serve` was given (refusing duplicate names)."""
    if isinstance(target, Tool | Module):
        return toolset([target])
    if isinstance(target, Mapping):
        items: list[Tool] = []
        for name, value in target.items():
            if isinstance(value, Tool):
                items.append(value if value.name == name else _renamed(value, name))
            elif isinstance(value, Module):
                items.append(Tool.from_module(value, name=name))
            else:
                raise MCPError(f"serve: {name!r} maps to {type(value).__name__}, not a Module.")
        return toolset(items)
    if isinstance(target, Iterable) and not isinstance(target, str | bytes):
        return toolset(target)
    raise MCPError(
        f"serve needs a Module, a Tool, a list of tools or a mapping of names to modules; got "
        f"{type(target).__name__}."
    )


def _renamed(tool: Tool, name: str) -> Tool:
    """A function or module tool's function as a tool named `name`."""
    function = getattr(tool, "function", None)
    if function is None:
        raise MCPError(
            f"serve: {name!r} maps to the tool {tool.name!r}, which cannot be renamed; map it "
            f"under its own name, {tool.name!r}."
        )
    return Tool(function, name=name)


def build_server(target: Target, name: str | None = None) -> Server[Any]:
    """The `mcp` SDK's low-level server answering `tools/list` and `tools/call`."""
    tools = served_tools(target)
    if not tools:
        raise MCPError("serve was given no tools.")
    listing = types.ListToolsResult(
        tools=[
            types.Tool(
                name=tool.name,
                description=tool.description.value or None,
                input_schema=tool.parameters_schema,
            )
            for tool in tools.values()
        ]
    )

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return listing

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:
            return _error(f"There is no tool named {params.name!r}. Tools: {', '.join(tools)}.")
        with Session():
            try:
                result = await tool.run(params.arguments or {}, None)
            except ToolError as exc:
                return _error(str(exc))
        return _result(result)

    default = type(target).__name__ if isinstance(target, Module) else "promptimus"
    return Server(name or default, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _result(result: Any) -> types.CallToolResult:
    from ..tools.results import tool_result_to_jsonable, tool_result_to_text

    text = tool_result_to_text(result)
    structured = tool_result_to_jsonable(result)
    content: list[Any] = [types.TextContent(text=text)]
    if isinstance(result, Message):
        content.extend(_image_block(image.url) for image in result.images)
    if isinstance(structured, dict):
        return types.CallToolResult(content=content, structured_content=structured)
    return types.CallToolResult(content=content)


def _image_block(url: str) -> Any:
    """An image a tool returned (`Message.images`): image content for a `data:` URL, else the
    URL named in a text block (the client fetches nothing on our behalf)."""
    found = _DATA_URL.fullmatch(url)
    if found is None:
        return types.TextContent(text=f"[image: {url}]")
    return types.ImageContent(data=found[2], mime_type=found[1])


async def serve_async(
    target: Target,
    *,
    name: str | None = None,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
) -> None:
    """Serve until stopped (stdio: until the client closes the pipe)."""
    server = build_server(target, name)
    if transport == "stdio":
        from .stdio_wire import stdio_wire

        async with stdio_wire() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    if transport != "http":
        raise MCPError(f"serve: transport must be 'stdio' or 'http', not {transport!r}.")
    import uvicorn

    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    try:
        await uvicorn.Server(config).serve()
    except SystemExit as exc:  # uvicorn's answer to an address it cannot listen on
        raise MCPError(
            f"serve: cannot listen on {host}:{port} (the HTTP server stopped with code "
            f"{exc.code}). Pick a free port, or a host of this machine."
        ) from None


def serve(
    target: Target,
    *,
    name: str | None = None,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
) -> None:
    """Serve `target` over MCP (blocks). Over HTTP the endpoint is `http://host:port/mcp`."""
    import anyio

    anyio.run(lambda: serve_async(target, name=name, transport=transport, host=host, port=port))
