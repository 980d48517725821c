"""The tool list a toolset offers: names given as one string, tools the server drops, many
list-changed notices at once, and a command line that holds a key.

Every server is the real small MCP server of tests/support/mcp_servers over stdio.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import pytest
from locations import MCP_SERVERS

from promptimus.errors import MCPError
from promptimus.mcp import MCPToolset

SERVER = str(MCP_SERVERS / "small_server.py")
BOUND = 60.0
KEY = "ghp_0123456789abcdefABCDEF"


def small(**options: Any) -> MCPToolset:
    return MCPToolset.stdio(sys.executable, [SERVER], **options)


async def settled(toolset: MCPToolset) -> None:
    """Wait until the re-listings the server's notices started are over (bounded)."""
    quiet = 0
    for _ in range(int(BOUND / 0.05)):
        running = toolset.refreshing is not None and not toolset.refreshing.done()
        quiet = 0 if running else quiet + 1
        if quiet >= 10:  # nothing running for ten looks in a row
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the toolset kept re-listing its tools")


async def test_one_string_is_one_tool_name() -> None:
    async with small(include="add") as toolset:
        assert set(toolset.tools) == {"add"}
    async with small(exclude="add", idempotent="count") as toolset:
        assert "add" not in toolset.tools and "weather" in toolset.tools
        assert toolset.tool("count").idempotent
        assert not toolset.tool("weather").idempotent  # only the one named, not its letters


def test_a_name_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(MCPError, match=r"include=.*got 3"):
        small(include=["add", 3])  # type: ignore[list-item]


async def test_an_included_tool_the_server_drops_is_no_longer_offered(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="promptimus.mcp")
    async with small(include=["add", "weather", "drop_tool"]) as toolset:
        version = toolset.tools_version
        await toolset.tool("drop_tool").call({"name": "weather"})
        for _ in range(int(BOUND / 0.05)):
            if toolset.tools_version > version:
                break
            await asyncio.sleep(0.05)
        await settled(toolset)
        assert set(toolset.tools) == {"add", "drop_tool"}
        assert json.loads(await toolset.tool("add").call({"a": 1, "b": 2})) == {"result": 3}
    warned = [r.getMessage() for r in caplog.records if r.name == "promptimus.mcp"]
    assert any("no tool named ['weather']" in text for text in warned)


async def test_many_list_changed_notices_make_a_few_readings() -> None:
    async with small() as toolset:
        version = toolset.tools_version
        said = await asyncio.wait_for(toolset.tool("announce_changes").call({"times": 5000}), BOUND)
        assert json.loads(said) == {"result": "announced 5000 times"}
        await settled(toolset)
        readings = toolset.tools_version - version
    assert 1 <= readings <= 50  # one per notice before


async def test_a_key_in_the_command_line_is_never_shown() -> None:
    toolset = MCPToolset.stdio(
        "/nonexistent/mcp-server-binary", ["--token", KEY, "--api-key=" + KEY, KEY, "serve"]
    )
    assert KEY not in repr(toolset) and KEY not in toolset.name
    with pytest.raises(MCPError) as raised:
        await asyncio.wait_for(toolset.open(), BOUND)
    message = str(raised.value)
    assert "/nonexistent/mcp-server-binary --token *** --api-key=*** *** serve" in message
    assert KEY not in message


async def test_a_script_path_in_the_command_line_is_shown() -> None:
    toolset = small()
    assert SERVER in toolset.server
