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

if TYPE_CHECKING:
    from promptimus.transport.sdk_errors import SDKErrors

__all__ = ["EventStream", "SSEDecoder"]

_DRAIN_SECONDS = 0.1


class SSEDecoder:
    """Split a byte stream into the data of its server-sent events (bytes, lines joined by LF).

    Only the ``data`` field is kept: chat-completion streams carry everything in it."""

    __slots__ = ("_data", "_rest")

    def __init__(self) -> None:
        self._rest = b""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> list[bytes]:
        """The data of every event that `chunk` completes, in order."""
        text = self._rest + chunk if self._rest else chunk
        carry = b""
        if b"\r" in text:
            if text.endswith(b"\r"):  # maybe the first half of a CRLF: wait for the next byte
                text, carry = text[:-1], b"\r"
            text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = text.split(b"\n")
        self._rest = lines.pop() + carry
        events: list[bytes] = []
        data = self._data
        for line in lines:
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
        return events

    def finish(self) -> list[bytes]:
        """The data of an event that a CR at the very end of the body completed."""
        return self.feed(b"\n") if self._rest.endswith(b"\r") else []


class EventStream:
    """Iterate over the JSON chunks of an event-stream response; `close` releases it.

    ``response`` is the HTTP response (its status, headers and request)."""

    __slots__ = ("_chunks", "_errors", "response")

    def __init__(self, response: Any, errors: SDKErrors) -> None:
        self.response = response
        self._errors = errors
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
        decoder = SSEDecoder()
        body = response.aiter_bytes()
        try:
            async for piece in body:
                for data in decoder.feed(piece):
                    if data.startswith(b"[DONE]"):
                        if response.http_version == "HTTP/1.1":
                            await _drain(body)
                        return
                    yield self._chunk(data)
            for data in decoder.finish():
                if data.startswith(b"[DONE]"):
                    return
                yield self._chunk(data)
        except errors.timeouts as exc:
            raise errors.APITimeoutError(request=response.request) from exc
        except errors.connection_errors as exc:
            raise errors.APIConnectionError(request=response.request) from exc
        finally:
            await response.aclose()

    def _chunk(self, data: bytes) -> Any:
        chunk = json.loads(data)
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
