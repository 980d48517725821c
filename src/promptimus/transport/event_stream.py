"""A server-sent event stream of JSON chunks, decoded as its bytes arrive.

A streamed chat completion is ``data: {json}`` events separated by blank lines and ended by
``data: [DONE]``. `EventStream` reads them straight from the HTTP response: each event's data is
handed to ``json.loads`` as bytes and the decoded value is yielded as it is, with no object built
per chunk (the SDK's ``AsyncStream`` builds a ``ServerSentEvent`` and a ``ChatCompletionChunk``
for each). It keeps what the SDK's stream does: lines end in LF, CRLF or CR; comments and
fields other than ``data`` are skipped; an event is dispatched at its blank line and one left
unfinished at the end of the body is dropped; a chunk whose ``error`` is set raises the SDK's
``APIError``, a broken connection ``APIConnectionError`` and a timeout ``APITimeoutError``; after
``[DONE]`` the rest of an HTTP/1.1 body is read (for at most 0.1 s) so the connection can be
reused, and the response is always closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TYPE_CHECKING, Any

from promptimus.errors import EventLineTooLong
from promptimus.transport.deadline import EventDeadline

if TYPE_CHECKING:
    from promptimus.transport.sdk_errors import SDKErrors

__all__ = ["MAX_LINE_BYTES", "EventStream", "SSEDecoder"]

_DRAIN_SECONDS = 0.1

MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest line an event stream may send (a chunk carrying a large image is a few MB)."""


class SSEDecoder:
    """Split a byte stream into the data of its server-sent events (bytes, lines joined by LF).

    Only the ``data`` field is kept: chat-completion streams carry everything in it. Decoding is
    linear in the bytes received: each byte is searched for a line end at most twice (once for
    LF, once for CR), and a line that arrives in pieces is joined once, when it ends
    (``scanned`` counts the bytes searched). A line longer than ``max_line`` bytes raises
    `EventLineTooLong` as soon as it is that long."""

    __slots__ = ("_cr", "_data", "_parts", "_size", "max_line", "scanned")

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self.max_line = max_line
        self.scanned = 0
        """Bytes searched for line ends so far."""
        self._parts: list[bytes] = []  # the pieces of the line not ended yet
        self._size = 0  # their total length
        self._cr = False  # the last line ended in CR: an LF right after it ends nothing
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        """The data of every event that `chunk` completes, in order."""
        events: list[bytes] = []
        size = len(chunk)
        start = 0
        if self._cr and size:
            self._cr = False
            if chunk[0] == 0x0A:  # the LF of a CRLF split between two chunks
                start = 1
        lf = cr = -2  # where the next LF / CR is (-1: none left; -2: not searched yet)
        while start < size:
            if lf != -1 and lf < start:
                lf = self._find(chunk, b"\n", start)
            if cr != -1 and cr < start:
                cr = self._find(chunk, b"\r", start)
            end = lf if cr == -1 or -1 < lf < cr else cr
            if end == -1:
                break
            self._line(self._ended(chunk[start:end]), events)
            start = end + 1
            if end == cr:
                if start == size:
                    self._cr = True
                elif chunk[start] == 0x0A:
                    start += 1
        if start < size:
            self._keep(chunk[start:] if start else chunk)
        return events

    def _find(self, chunk: bytes, byte: bytes, start: int) -> int:
        found = chunk.find(byte, start)
        self.scanned += (len(chunk) if found == -1 else found + 1) - start
        return found

    def _keep(self, piece: bytes) -> None:
        self._size += len(piece)
        if self._size > self.max_line:
            self._parts.clear()
            raise self._too_long()
        self._parts.append(piece)

    def _ended(self, piece: bytes) -> bytes:
        """The whole line that ``piece`` ends."""
        if self._parts:
            self._keep(piece)
            piece = b"".join(self._parts)
            self._parts.clear()
            self._size = 0
        elif len(piece) > self.max_line:
            raise self._too_long()
        return piece

    def _too_long(self) -> EventLineTooLong:
        return EventLineTooLong(
            f"the event stream sent a line longer than {self.max_line} bytes (a page without "
            "line ends where events should be, or a runaway event)"
        )

    def _line(self, line: bytes, events: list[bytes]) -> None:
        data = self._data
        if not line:
            if data:
                events.append(data[0] if len(data) == 1 else b"\n".join(data))
                data.clear()
        elif line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(b" ") else value)
        elif line == b"data":
            data.append(b"")
        # comments (":...") and the event, id and retry fields: nothing a chunk needs

    def finish(self) -> list[bytes]:
        """The data of events the end of the body completes: none (a line end ends a line at
        once, and an event left unfinished at the end of the body is dropped)."""
        return []


class EventStream:
    """Iterate over the JSON chunks of an event-stream response; `close` releases it.

    ``response`` is the HTTP response (its status, headers and request); each event must arrive
    whole within ``limit`` seconds of the one before (of the first read, for the first), else
    the SDK's ``APITimeoutError`` (None: no limit)."""

    __slots__ = ("_chunks", "_deadline", "_errors", "response")

    def __init__(self, response: Any, errors: SDKErrors, limit: float | None = None) -> None:
        self.response = response
        self._errors = errors
        self._deadline = EventDeadline(limit, self._timed_out)
        self._chunks = self._read()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Any:
        return await self._chunks.__anext__()

    async def close(self) -> None:
        await self._chunks.aclose()
        await self.response.aclose()

    async def _read(self) -> AsyncGenerator[Any, None]:
        response = self.response
        errors = self._errors
        decoder = SSEDecoder(MAX_LINE_BYTES)
        body = response.aiter_bytes()
        try:
            while True:
                piece = await self._deadline.next(body, None)
                if piece is None:
                    break
                for data in decoder.feed(piece):
                    if data.startswith(b"[DONE]"):
                        if response.http_version == "HTTP/1.1":
                            await _drain(body)
                        return
                    yield self._chunk(data)
                    self._deadline.restart()
        except errors.timeouts as exc:
            raise errors.APITimeoutError(request=response.request) from exc
        except errors.connection_errors as exc:
            raise errors.APIConnectionError(request=response.request) from exc
        finally:
            await response.aclose()

    def _timed_out(self) -> BaseException:
        error: BaseException = self._errors.APITimeoutError(request=self.response.request)
        return error

    def _chunk(self, data: bytes) -> Any:
        chunk = json.loads(data)  # what it raises is named by the retry layer
        if isinstance(chunk, dict) and chunk.get("error"):
            raise self._errors.stream_error(chunk["error"], self.response.request)
        return chunk


async def _drain(body: AsyncIterator[bytes]) -> None:
    """Read what follows ``[DONE]`` (usually only the end of the body), briefly: a server that
    keeps the stream open past it costs the connection, never the reply."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for _ in body:
                pass
