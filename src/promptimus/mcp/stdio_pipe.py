"""The stdio transport of `MCPToolset`: a server subprocess, spoken to over its stdin/stdout.

It does what the SDK's `stdio_client` does, with one difference that decides whether a lost
call may be sent again: a message is written to the server's stdin *by the task that sends it*,
and `send` tells a write the pipe refused from one it took. A server that has exited has no
reader on its stdin, so the write fails at once (`EPIPE`, or a pipe asyncio already saw close):
`send` raises, the session reports a closed connection, and `DeliveryWatch` never marks the
attempt as sent, so the call is sent again over a fresh connection. Once the bytes are in the
pipe, the server may read them, and a connection lost after that is "outcome unknown". (The
SDK hands each message to a writer task through a memory stream: the hand-off succeeded whether
or not the write then failed, so the same dead server looked like a connection lost mid-call.)

A pipe may still take a write after the server can no longer read it: a killed server's
process shows as exited while one of its threads is still releasing its files, so its stdin
keeps a reader a little longer (on a busy machine, long enough for a call to be written). So
`send` leaves the attempt a probe: once the pipe has no reader left (poll says `POLLERR`), the
bytes still unread in it (`FIONREAD`) tell whether the request was ever read; if not, the call
is sent again like one whose write failed. The probe reads the pipe through a duplicate of our
end, since asyncio closes its own as soon as it sees the reader go.

Shutdown follows the MCP spec: close stdin, give the server 2 s to exit, then end its process
group (it was started in a session of its own), every wait bounded and shielded. POSIX only:
on Windows the toolset uses the SDK's transport.
"""

from __future__ import annotations

import array
import asyncio
import codecs
import contextlib
import logging
import os
import select
from collections.abc import AsyncIterator
from typing import IO, Any

import anyio
import mcp_types
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from .delivery import attempt_var

__all__ = ["PipeWriter", "stdio_pipe"]

log = logging.getLogger("promptimus.mcp")

_EXIT_GRACE = 2.0
_KILL_WAIT = 2.0
_READER_GRACE = 2.0  # how long a server whose output ended may take to release its stdin
_CHUNK = 1 << 16


class PipeWriter:
    """The session's write stream: each message is one JSON line written to the server's
    stdin by the sending task. Raises `anyio.BrokenResourceError` when the pipe refused the
    write (nothing of it reached the server); returns once the bytes were handed to the pipe."""

    __slots__ = ("_closed", "_encoding", "_final", "_handed", "_lock", "_probe", "_stdin")

    def __init__(self, stdin: asyncio.StreamWriter, encoding: str) -> None:
        self._stdin = stdin
        self._encoding = encoding
        self._lock = asyncio.Lock()
        self._closed = False
        self._handed = 0  # bytes handed to the pipe so far (an upper bound on what entered it)
        pipe = stdin.transport.get_extra_info("pipe")
        self._probe: int | None = os.dup(pipe.fileno())
        self._final: tuple[bool, int] | None = None  # what the probe saw when it was closed

    async def send(self, item: SessionMessage, /) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        line = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        data = line.encode(self._encoding)
        async with self._lock:
            stdin = self._stdin
            if stdin.transport.is_closing():  # the pipe closed before: the write is dropped
                raise anyio.BrokenResourceError
            stdin.write(data)  # writes at once when nothing is queued; EPIPE closes the pipe
            if stdin.transport.is_closing():
                raise anyio.BrokenResourceError
            start = self._handed
            self._handed += len(data)
            attempt = attempt_var.get()
            if attempt is not None:
                attempt.unread = lambda: self._never_read(start)
                attempt.settle = self._reader_gone
            # Taken: a failure past this point may come after the server read the bytes, and
            # the session learns of it as the end of the server's output.
            with contextlib.suppress(ConnectionError, OSError):
                await stdin.drain()

    async def _reader_gone(self) -> None:
        """Wait, bounded, until the pipe has no reader left. The session learns of a dead server
        from the end of its output, and a dying process may release its stdin after its stdout
        (the SDK's server reads the wire from a duplicate above the standard descriptors): until
        then the probe cannot tell whether the request was read."""
        deadline = anyio.current_time() + _READER_GRACE
        while self._probe is not None and anyio.current_time() < deadline:
            seen = self._look()
            if seen is None or seen[0]:
                return
            await anyio.sleep(0.005)

    def _never_read(self, start: int) -> bool:
        """Whether the bytes written from offset `start` on were surely never read: the pipe has
        no reader left and holds at least everything from `start` on, unread."""
        seen = self._look() if self._probe is not None else self._final
        if seen is None:
            return False
        reader_gone, unread = seen
        return reader_gone and self._handed - unread <= start

    def _look(self) -> tuple[bool, int] | None:
        """(no reader left, bytes unread in the pipe), or None if the pipe cannot say."""
        import fcntl  # POSIX only, as this transport is (the module imports on Windows too)
        import termios

        assert self._probe is not None
        try:
            poll = select.poll()
            poll.register(self._probe, select.POLLOUT)
            events = poll.poll(0)
            count = array.array("i", [0])
            fcntl.ioctl(self._probe, termios.FIONREAD, count, True)
        except OSError:
            return None
        reader_gone = any(mask & select.POLLERR for _, mask in events)
        return reader_gone, count[0]

    async def aclose(self) -> None:
        # The session closes its write stream as soon as the server's output ends, which may
        # be before a dying server released its stdin: the probe stays open for the failed
        # call's question until the transport itself shuts down (`release_probe`).
        self._closed = True

    def release_probe(self) -> None:
        """Close our duplicate of the server's stdin, keeping what it saw last. It must go
        before stdin is closed, or the server never sees the end of its input."""
        if self._probe is not None:
            self._final = self._look()
            os.close(self._probe)
            self._probe = None

    async def __aenter__(self) -> PipeWriter:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def _parse(line: str) -> SessionMessage | Exception:
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        log.warning("an MCP server wrote a line that is not JSON-RPC: %.200s", line)
        return exc


@contextlib.asynccontextmanager
async def stdio_pipe(
    server: StdioServerParameters, errlog: IO[str]
) -> AsyncIterator[tuple[Any, PipeWriter]]:
    """Start `server` and yield the session's (read stream, write stream)."""
    process = await asyncio.create_subprocess_exec(
        server.command,
        *server.args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=errlog,
        env=get_default_environment() | (server.env or {}),
        cwd=server.cwd,
        start_new_session=True,
    )
    assert process.stdin is not None and process.stdout is not None
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    writer = PipeWriter(process.stdin, server.encoding)

    async def read() -> None:
        assert process.stdout is not None
        decoder = codecs.getincrementaldecoder(server.encoding)(errors="replace")
        buffer = ""
        async with to_session:  # closing it is the session's end of file
            with contextlib.suppress(
                anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError
            ):
                while chunk := await process.stdout.read(_CHUNK):
                    *lines, buffer = (buffer + decoder.decode(chunk)).split("\n")
                    for line in lines:
                        if line.strip():
                            await to_session.send(_parse(line))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        try:
            yield from_server, writer
        finally:
            with anyio.CancelScope(shield=True):
                await writer.aclose()
                writer.release_probe()
                from_server.close()
                await _stop(process)
            tasks.cancel_scope.cancel()


async def _exited(process: asyncio.subprocess.Process, seconds: float) -> bool:
    """Whether the process exits within `seconds` (its return code polled: `wait()` would also
    wait for pipes a child of the server may still hold)."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:  # noqa: ASYNC110 - nothing signals an exit without wait()
            await anyio.sleep(0.01)
    return process.returncode is not None


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Close stdin, wait for the server to exit, then end its process group (bounded)."""
    assert process.stdin is not None
    process.stdin.close()
    if not await _exited(process, _EXIT_GRACE):
        await terminate_posix_process_tree(process, _KILL_WAIT)  # type: ignore[arg-type]
        if not await _exited(process, _KILL_WAIT):
            log.warning("the MCP server process %d is still alive after a kill", process.pid)
