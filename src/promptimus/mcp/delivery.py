"""Whether a tool call's request reached the MCP server: what decides if it may be sent again.

`MCPToolset` repeats a call after reconnecting only when the server surely never got it. Each
call marks its `Attempt` (a context variable, so concurrent calls never mix) from two places
that run in the calling task's context:

- `DeliveryWatch`, the session's write stream: the `tools/call` request was handed to the
  transport (from then on the server may have run it);
- `ConnectWatch`, the HTTP client's transport: the POST could not even connect, so not one
  byte of it left (the SDK reports that as the same lost connection as a crash mid-call);
- the stdio transport (`stdio_pipe.PipeWriter`) leaves a probe, `unread`: a write can be taken
  by a pipe whose reader is already on its way out (a killed server's last thread still
  holds the pipe), and once no reader is left, the pipe itself says whether the request's
  bytes are still in it, never read.

Whether a failed call is the server's answer or a lost connection is told the same way, by
what happened, never by an error's code or text (a server may answer with any code, -32000
"Connection closed" included, and any message, "Session not found" included):

- `ReplyWatch`, the session's read stream, marks the attempt `answered` when a reply to its
  request was read from the connection (the SDK makes up its "Connection closed" error
  without one when the connection ends);
- `ConnectWatch` marks it `cut` when the HTTP exchange that carries it failed after connecting
  (the response could not be read, or an event stream ended without the reply: the SDK then
  makes up an error as if the server had sent it), and `session_unknown` when the server
  answered it with HTTP 404 to our session id (the protocol's way of saying the session is
  gone: the server ran nothing).
"""

from __future__ import annotations

import contextvars
import json
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Self

import httpx2
from mcp_types import JSONRPCError, JSONRPCResponse

__all__ = [
    "Attempt",
    "ConnectWatch",
    "DeliveryWatch",
    "Replies",
    "ReplyWatch",
    "attempt_var",
    "http_client",
]

# The MCP SDK's own defaults for HTTP: a server may hold a response stream open a long time.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


class Attempt:
    """One `tools/call` in progress: `sent` once its request is in the transport's hands,
    `unconnected` if its HTTP POST never connected, `unread` (set by a transport that can
    tell) answering True only when the request surely never left the transport for the server.

    `maybe_delivered` is read once the call has failed, after awaiting `settle` (set with
    `unread`): that is when `unread` can answer. `answered`, `cut` and `session_unknown` say
    what happened to its reply (see the module's docstring); `lost` sums them up."""

    __slots__ = (
        "__weakref__",
        "answered",
        "cut",
        "request_id",
        "sent",
        "session_unknown",
        "settle",
        "unconnected",
        "unread",
    )

    def __init__(self) -> None:
        self.sent = False
        self.unconnected = False
        self.unread: Callable[[], bool] | None = None
        self.settle: Callable[[], Awaitable[None]] | None = None
        self.request_id: str | None = None
        self.answered = False
        self.cut = False
        self.session_unknown = False

    @property
    def lost(self) -> bool:
        """Whether the call's error stands for a connection or session that is gone, rather
        than for an answer the server sent."""
        return not self.answered or self.cut or self.session_unknown or self.unconnected

    @property
    def maybe_delivered(self) -> bool:
        if not self.sent or self.unconnected:
            return False
        return self.unread is None or not self.unread()


attempt_var: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar(
    "promptimus_mcp_attempt", default=None
)


class Replies:
    """The attempts of one connection whose requests are out, by request id (held weakly: an
    attempt that ended is forgotten with it)."""

    __slots__ = ("waiting",)

    def __init__(self) -> None:
        self.waiting: weakref.WeakValueDictionary[str, Attempt] = weakref.WeakValueDictionary()


class _Wrapped:
    """A stream of the client session, wrapped: what the wrapper does not do itself (closing,
    `async with`, any other attribute) is the wrapped stream's."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class DeliveryWatch(_Wrapped):
    """The client session's write stream (the SDK's `WriteStream` protocol), marking the
    current attempt as sent once its `tools/call` request has been handed on (and noting its
    request id in ``replies`` first, for `ReplyWatch` and `ConnectWatch`)."""

    __slots__ = ("replies",)

    def __init__(self, inner: Any, replies: Replies | None = None) -> None:
        super().__init__(inner)
        self.replies = replies if replies is not None else Replies()

    async def send(self, item: Any, /) -> None:
        attempt = attempt_var.get()
        calls = attempt is not None and getattr(item.message, "method", None) == "tools/call"
        if calls:
            assert attempt is not None
            attempt.request_id = str(item.message.id)
            self.replies.waiting[attempt.request_id] = attempt
        await self._inner.send(item)
        if calls:
            assert attempt is not None
            attempt.sent = True


class ReplyWatch(_Wrapped):
    """The client session's read stream, marking an attempt `answered` when a reply to its
    request comes in from the connection (before the session hands it to the caller)."""

    __slots__ = ("_replies",)

    def __init__(self, inner: Any, replies: Replies) -> None:
        super().__init__(inner)
        self._replies = replies

    def _note(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            attempt = self._replies.waiting.pop(str(message.id), None)
            if attempt is not None:
                attempt.answered = True
        return item

    async def receive(self) -> Any:
        return self._note(await self._inner.receive())

    def __aiter__(self) -> ReplyWatch:
        return self

    async def __anext__(self) -> Any:
        return self._note(await self._inner.__anext__())


def _carries(request: httpx2.Request, attempt: Attempt) -> bool:
    """Whether the POST ``request`` carries the `tools/call` of ``attempt``."""
    if request.method != "POST" or attempt.request_id is None:
        return False
    try:
        body = json.loads(request.content)
    except (ValueError, RecursionError, httpx2.RequestNotRead):
        return False
    return isinstance(body, dict) and str(body.get("id")) == attempt.request_id


class _WatchedBody(httpx2.AsyncByteStream):
    """A response body that marks ``attempt`` cut if reading it fails, or (an event stream)
    if it ends: the SDK stops reading an event stream once the reply is in."""

    def __init__(self, inner: Any, attempt: Attempt, end_is_cut: bool) -> None:
        self._inner = inner
        self._attempt = attempt
        self._end_is_cut = end_is_cut

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except Exception:
            self._attempt.cut = True
            raise
        if self._end_is_cut:
            self._attempt.cut = True

    async def aclose(self) -> None:
        await self._inner.aclose()


class ConnectWatch(httpx2.AsyncBaseTransport):
    """The HTTP transport of the toolset's client, watching the exchange that carries a call
    (the SDK sends each request from a copy of the caller's context): a POST that fails to
    connect marks the attempt `unconnected`; one that fails later, or whose event stream ends
    without the reply, `cut`; one the server answers with 404 to our session id,
    `session_unknown`."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        attempt = attempt_var.get()
        if attempt is not None and not _carries(request, attempt):
            attempt = None
        try:
            response = await self._inner.handle_async_request(request)
        except httpx2.ConnectError:
            if attempt is not None:
                attempt.unconnected = True
            raise
        except Exception:
            if attempt is not None:
                attempt.cut = True
            raise
        if attempt is None:
            return response
        if response.status_code == 404 and "mcp-session-id" in request.headers:
            attempt.session_unknown = True
        kind = response.headers.get("content-type", "").lower()
        response.stream = _WatchedBody(
            response.stream, attempt, kind.startswith("text/event-stream")
        )
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_client(headers: dict[str, str]) -> httpx2.AsyncClient:
    """The toolset's HTTP client: the SDK's timeouts, the given headers, `ConnectWatch`."""
    return httpx2.AsyncClient(headers=headers, timeout=_HTTP_TIMEOUT, transport=ConnectWatch())
