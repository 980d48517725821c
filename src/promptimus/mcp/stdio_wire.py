"""The stdio transport of `serve`: one JSON-RPC message per line on stdin and stdout, where
every line gets its answer.

The `mcp` SDK's own stdio transport hands a line it cannot validate to the server as an
exception, which the server only logs, so a client whose request was malformed waited for a
reply forever. Here each line goes through `jsonrpc_line.read_line` (in a worker thread, so a
large line never stalls the event loop): a message goes to the server, anything else gets its
JSON-RPC error reply at once, and serving goes on. A line longer than `MAX_LINE_BYTES` is
discarded as it is read (memory stays bounded) and answered with a parse error.

Like the SDK's transport, it claims the process's fd 0 and 1 while serving: the wire is read and
written through private duplicates, fd 0 reads the null device and fd 1 writes to stderr, so a
served tool that reads stdin or prints cannot corrupt the wire; both are restored on exit.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, BinaryIO

import anyio
from mcp.shared.message import SessionMessage

from ..errors import MCPError
from .jsonrpc_line import Refusal, read_line, refuse_long_line

__all__ = ["MAX_LINE_BYTES", "read_wire_line", "stdio_wire"]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line (one JSON-RPC message) `serve` reads over stdio."""

_DISCARD_CHUNK = 1024 * 1024


def read_wire_line(wire: BinaryIO, limit: int) -> tuple[bytes, bool] | None:
    """The next line (without its newline) and whether it fit in `limit` bytes, or None at the
    end of input; a longer line comes back as its first `limit` bytes, the rest read and
    dropped."""
    line = wire.readline(limit + 1)
    if not line:
        return None
    if line.endswith(b"\n"):
        return line[:-1], True
    if len(line) <= limit:  # the last line, without a newline
        return line, True
    while True:
        rest = wire.readline(_DISCARD_CHUNK)
        if not rest or rest.endswith(b"\n"):
            return line[:limit], False


def _next_line(wire: BinaryIO, limit: int) -> tuple[Any, bool]:
    """(what the next line holds or gets, whether input goes on): runs in a worker thread."""
    read = read_wire_line(wire, limit)
    if read is None:
        return None, False
    line, fits = read
    return (read_line(line) if fits else refuse_long_line(line, limit)), True


def _private_copy(fd: int) -> int:
    """A duplicate of `fd` numbered above the standard streams (never 0, 1 or 2)."""
    if sys.platform == "win32":  # pragma: no cover
        return os.dup(fd)
    import fcntl

    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)


def _claim_stdio() -> tuple[BinaryIO, BinaryIO, Callable[[], None]]:
    """Private streams for the wire, and the function that gives fd 0 and 1 back."""
    # A process started with fd 0 or 1 closed has no sys.stdin / sys.stdout, and the number
    # may since have been reused (by the event loop's selector, say): never take it as the wire.
    for name, stream, role in (("stdin", sys.stdin, "writes to"), ("stdout", sys.stdout, "reads")):
        if stream is None:
            raise MCPError(
                f"serve over stdio needs an open {name}, the pipe the MCP client {role}; it is "
                "closed. Start the server from an MCP client, or serve with --http."
            )
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    wire_in_fd = _private_copy(0)
    wire_out_fd = _private_copy(1)
    null_in = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_in, 0)
    os.close(null_in)
    try:
        os.dup2(2, 1)
    except OSError:  # stderr is closed too: stray output goes nowhere
        null_out = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null_out, 1)
        os.close(null_out)

    def restore() -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stdout.flush()
        os.dup2(wire_in_fd, 0)
        os.dup2(wire_out_fd, 1)

    # closefd=False: a worker thread may still block reading the wire after serving ends, so
    # its descriptor must never be closed (and reused) under it
    wire_in = os.fdopen(wire_in_fd, "rb", closefd=False)
    wire_out = os.fdopen(wire_out_fd, "wb", closefd=False)
    return wire_in, wire_out, restore


def _write(wire: BinaryIO, data: bytes) -> None:
    wire.write(data)
    wire.flush()


@asynccontextmanager
async def stdio_wire(
    max_line_bytes: int = MAX_LINE_BYTES,
) -> AsyncIterator[tuple[Any, Any]]:
    """`(read_stream, write_stream)` for `Server.run`, over the process's stdin and stdout."""
    wire_in, wire_out, restore = _claim_stdio()
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_client, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
    replies = to_client.clone()  # the reader's own handle: the server closes `to_client`

    async def read_lines() -> None:
        async with to_server, replies:
            while True:
                verdict, more = await anyio.to_thread.run_sync(
                    _next_line, wire_in, max_line_bytes, abandon_on_cancel=True
                )
                if not more:
                    return
                if isinstance(verdict, Refusal):
                    await replies.send(SessionMessage(verdict.reply))
                elif verdict is not None:
                    await to_server.send(SessionMessage(verdict))

    async def write_lines() -> None:
        async with outgoing:
            async for item in outgoing:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await anyio.to_thread.run_sync(_write, wire_out, text.encode() + b"\n")

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_lines)
            tasks.start_soon(write_lines)
            yield from_client, to_client
    finally:
        restore()
