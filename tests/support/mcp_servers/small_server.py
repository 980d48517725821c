"""A small real MCP server for the tests, written with the `mcp` SDK.

Over stdio: `python small_server.py`; over streamable HTTP: `... small_server.py --http PORT`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import struct
import subprocess
import sys
import zlib

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations

server = MCPServer("small")
_counter = {"n": 0}


@server.tool(annotations=ToolAnnotations(idempotent_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def count() -> str:
    """Count the calls made on this server process (state kept between calls)."""
    _counter["n"] += 1
    return f"call {_counter['n']}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def weather(city: str) -> dict[str, object]:
    """The weather in a city, as structured data."""
    return {"city": city, "temperature": 21}


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason given."""
    raise ValueError(f"failed on purpose: {reason}")


@server.tool()
async def hang() -> str:
    """Never returns."""
    await asyncio.sleep(3600)
    return "never"


@server.tool()
def shout(text: str) -> str:
    """Write to stderr, return the text in capitals."""
    print(f"shouting {text}", file=sys.stderr, flush=True)
    return text.upper()


def extra(text: str) -> str:
    """A tool added while the server runs."""
    return text[::-1]


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `extra` and tell the client its tool list changed."""
    server.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool()
async def shrink(ctx: Context) -> str:
    """Remove the tool `extra` and tell the client its tool list changed."""
    server.remove_tool("extra")
    await ctx.session.send_tool_list_changed()
    return "shrunk"


@server.tool()
def pid() -> int:
    """The server's process id (so a test can end it from outside)."""
    return os.getpid()


@server.tool()
def hold_pipes() -> int:
    """Start a process that holds this server's pipes open without reading them until bytes
    arrive on its stdin, then exits (a server killed while something still holds its pipes,
    as its own last thread does for a moment); return that process's id."""
    pipes, inbound = [], []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                pipes.append(fd)
                if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
                    inbound.append(fd)
    watch = (
        "import select, sys\n"
        "poll = select.poll()\n"
        "for fd in sys.argv[1:]: poll.register(int(fd), select.POLLIN)\n"
        "poll.poll(120_000)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", watch, *map(str, inbound)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        pass_fds=pipes,
    )
    return holder.pid


@server.tool()
def die() -> str:
    """End the server process at once (a server that goes away between calls)."""
    sys.stderr.flush()
    os._exit(1)


def red_pixel_png() -> bytes:
    """A real 1x1 red PNG, built by hand (signature, IHDR, IDAT, IEND)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


@server.tool()
def snapshot(label: str) -> list[str | Image]:
    """A caption and a picture (a 1x1 red PNG)."""
    return [f"snapshot {label}", Image(data=red_pixel_png(), format="png")]


@server.tool()
def diagram(label: str) -> list[str | Image]:
    """A caption and a drawing in SVG, an image format chat APIs do not take."""
    svg = f'<svg xmlns="http://www.w3.org/2000/svg"><text>{label}</text></svg>'
    return [f"diagram {label}", Image(data=svg.encode(), format="svg+xml")]


@server.tool()
def tally_then_die(path: str) -> str:
    """Append one line to the file at `path` (counting runs), then end the server process
    before answering: a tool whose connection is lost after it ran."""
    with open(path, "a", encoding="utf-8") as tally:
        tally.write("ran\n")
    sys.stderr.flush()
    os._exit(1)


@server.tool()
def tally_then_die_once(path: str) -> str:
    """Append one line to the file at `path`; on the first line ever, end the server process
    before answering (a call lost after it ran), later answer how many lines there are."""
    with open(path, "a+", encoding="utf-8") as tally:
        tally.write("ran\n")
        tally.seek(0)
        runs = len(tally.read().splitlines())
    if runs == 1:
        sys.stderr.flush()
        os._exit(1)
    return f"ran {runs} times"


@server.tool()
def answer_error(code: int, message: str, path: str) -> str:
    """Append one line to the file at `path` (counting runs), then answer the call with the
    JSON-RPC error `code` / `message`: a server's own error reply, whatever it says."""
    with open(path, "a", encoding="utf-8") as tally:
        tally.write("ran\n")
    raise MCPError(code=code, message=message)


@server.tool()
async def drop_tool(ctx: Context, name: str) -> str:
    """Remove the tool `name` and tell the client its tool list changed."""
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return f"dropped {name}"


@server.tool()
async def announce_changes(ctx: Context, times: int) -> str:
    """Tell the client `times` times that the tool list changed (it did not)."""
    for _ in range(times):
        await ctx.session.send_tool_list_changed()
    return f"announced {times} times"


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
