"""A small HTTP/1.1 server on asyncio streams: keep-alive, Content-Length bodies, chunked streams.

Just enough HTTP for the fake OpenAI server: one request at a time per connection (no pipelining),
request bodies by ``Content-Length`` or chunked encoding, plain responses with ``Content-Length``
and streamed responses (SSE) with chunked encoding so the connection survives the stream.
Closing the server aborts every open connection at once, whatever its handler is waiting on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus

__all__ = ["HttpConnection", "HttpRequest", "HttpServer"]

_MAX_HEAD = 1 << 16


@dataclass(slots=True)
class HttpRequest:
    method: str
    path: str
    """The target without its query string."""
    query: str
    headers: dict[str, str]
    """Header names in lower case; a repeated header keeps its last value."""
    body: bytes


class HttpConnection:
    """The handler's side of one connection: answer a request exactly once, or drop it."""

    __slots__ = ("_reader", "_writer", "closing", "request", "responded")

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        request: HttpRequest | None = None,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.request = request
        """The request being answered (its headers, e.g. to quote the API key back)."""
        self.responded = False
        self.closing = False
        """True once the connection must close after the current response."""

    async def send(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Send a complete response with a ``Content-Length`` body."""
        self.responded = True
        head = (
            f"{_status_line(status)}content-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
        )
        self._writer.write((head + _header_lines(headers, self.closing) + "\r\n").encode() + body)
        await self._writer.drain()

    async def send_slowly(
        self, status: int, body: bytes, every: float, sent: Callable[[], None]
    ) -> None:
        """Announce all of ``body`` (``Content-Length``), then send it one byte every ``every``
        seconds until it is all sent or the client has gone, calling ``sent`` for each."""
        self.responded = True
        head = f"{_status_line(status)}content-type: application/json\r\n"
        head += f"content-length: {len(body)}\r\n{_header_lines(None, self.closing)}\r\n"
        self._writer.write(head.encode())
        await self.drip(body, every, sent)

    async def drip(
        self, data: bytes, every: float, sent: Callable[[], None], *, chunked: bool = False
    ) -> None:
        """Send ``data`` one byte every ``every`` seconds (each byte its own chunk if
        ``chunked``) until it is all sent or the client has gone, calling ``sent`` for each."""
        with contextlib.suppress(ConnectionError):
            for index in range(len(data)):
                byte = data[index : index + 1]
                self._writer.write(b"1\r\n%s\r\n" % byte if chunked else byte)
                await self._writer.drain()
                sent()
                if self._writer.is_closing():
                    break
                await asyncio.sleep(every)

    async def start_stream(
        self,
        status: int = 200,
        *,
        content_type: str = "text/event-stream; charset=utf-8",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Send the head of a chunked response; follow with `send_chunk` and `end_stream`."""
        self.responded = True
        head = (
            f"{_status_line(status)}content-type: {content_type}\r\n"
            "transfer-encoding: chunked\r\ncache-control: no-cache\r\n"
        )
        self._writer.write((head + _header_lines(headers, self.closing) + "\r\n").encode())
        await self._writer.drain()

    async def send_chunk(self, data: bytes) -> None:
        if data:
            self._writer.write(b"%x\r\n%s\r\n" % (len(data), data))
            await self._writer.drain()

    async def end_stream(self) -> None:
        self._writer.write(b"0\r\n\r\n")
        await self._writer.drain()

    async def send_partial(self, status: int, body: bytes, sent: int) -> None:
        """Announce all of ``body`` (``Content-Length``), send its first ``sent`` bytes, then
        close the connection: a server that died while answering."""
        self.responded = True
        self.closing = True
        head = f"{_status_line(status)}content-type: application/json\r\n"
        head += f"content-length: {len(body)}\r\n{_header_lines(None, True)}\r\n"
        self._writer.write(head.encode() + body[:sent])
        await self._writer.drain()
        self.close()

    def close(self) -> None:
        """Close the connection gracefully (FIN), wherever the response is."""
        self.responded = True
        self.closing = True
        self._writer.close()

    def drop(self) -> None:
        """Close the connection at once, without (the rest of) a response."""
        self.responded = True
        self.closing = True
        self._writer.transport.abort()

    async def wait_peer_closed(self) -> None:
        """Wait until the client closes the connection (used to stall a response)."""
        with contextlib.suppress(ConnectionError):
            while await self._reader.read(1 << 16):
                pass


Handler = Callable[[HttpRequest, HttpConnection], Awaitable[None]]


class HttpServer:
    """Serve ``handler`` on ``host:port`` (port 0 picks a free one) until `close`."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(
            self._serve, host, port, limit=_MAX_HEAD, backlog=1024
        )
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        tasks = list(self._connections)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 1.0)
        self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        self._writers.add(writer)
        try:
            await self._serve_requests(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass  # the peer went away or sent something unreadable: just close
        except asyncio.CancelledError:
            # `close` cancels us on purpose; finishing normally keeps asyncio's stream callback
            # from logging the cancellation as an error.
            pass
        finally:
            self._connections.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _serve_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return  # the client closed the connection between requests
            except asyncio.LimitOverrunError:
                await _plain_error(writer, 431, "request head too large")
                return
            request, keep_alive = _parse_head(head)
            if request is None:
                await _plain_error(writer, 400, "malformed request line or header")
                return
            if request.headers.get("expect", "").lower() == "100-continue":
                writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            request.body = await _read_body(reader, request.headers)
            conn = HttpConnection(reader, writer, request)
            conn.closing = not keep_alive
            try:
                await self._handler(request, conn)
            except (ConnectionError, asyncio.CancelledError):
                raise
            except Exception as exc:
                if conn.responded:
                    raise ConnectionError("handler failed mid-response") from exc
                await _plain_error(writer, 500, f"fake server handler failed: {exc!r}")
                return
            if not conn.responded:
                await _plain_error(writer, 500, "fake server handler sent no response")
                return
            if conn.closing:
                return


def _parse_head(head: bytes) -> tuple[HttpRequest | None, bool]:
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
    except ValueError:
        return None, False
    path, _, query = target.partition("?")
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return HttpRequest(method.upper(), path, query, headers, b""), keep_alive


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readuntil(b"\r\n")  # trailers are not supported: expect none
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length = int(headers.get("content-length") or 0)
    return await reader.readexactly(length) if length else b""


def _status_line(status: int) -> str:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    return f"HTTP/1.1 {status} {phrase}\r\n"


def _header_lines(headers: dict[str, str] | None, closing: bool) -> str:
    lines = "server: promptimus-fake\r\n"
    if closing:
        lines += "connection: close\r\n"
    if headers:
        lines += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return lines


async def _plain_error(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    body = json.dumps({"error": {"message": message, "type": kind, "code": None}}).encode()
    writer.write(
        (
            _status_line(status) + "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode()
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()
