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
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

import httpx2

__all__ = ["Attempt", "ConnectWatch", "DeliveryWatch", "attempt_var", "http_client"]

# The MCP SDK's own defaults for HTTP: a server may hold a response stream open a long time.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


class Attempt:
    """One `tools/call` in progress: `sent` once its request is in the transport's hands,
    `unconnected` if its HTTP POST never connected, `unread` (set by a transport that can
    tell) answering True only when the request surely never left the transport for the server.

    `maybe_delivered` is read once the call has failed: that is when `unread` can answer."""

    __slots__ = ("sent", "unconnected", "unread")

    def __init__(self) -> None:
        self.sent = False
        self.unconnected = False
        self.unread: Callable[[], bool] | None = None

    @property
    def maybe_delivered(self) -> bool:
        if not self.sent or self.unconnected:
            return False
        return self.unread is None or not self.unread()


attempt_var: contextvars.ContextVar[Attempt | None] = contextvars.ContextVar(
    "promptimus_mcp_attempt", default=None
)


class DeliveryWatch:
    """The client session's write stream (the SDK's `WriteStream` protocol), marking the
    current attempt as sent once its `tools/call` request has been handed on."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: Any, /) -> None:
        await self._inner.send(item)
        attempt = attempt_var.get()
        if attempt is not None and getattr(item.message, "method", None) == "tools/call":
            attempt.sent = True

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> DeliveryWatch:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ConnectWatch(httpx2.AsyncBaseTransport):
    """The HTTP transport of the toolset's client: a POST that fails to connect marks the
    attempt it carries (the SDK sends each request from a copy of the caller's context)."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            return await self._inner.handle_async_request(request)
        except httpx2.ConnectError:
            attempt = attempt_var.get()
            if attempt is not None and request.method == "POST":
                attempt.unconnected = True
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


def http_client(headers: dict[str, str]) -> httpx2.AsyncClient:
    """The toolset's HTTP client: the SDK's timeouts, the given headers, `ConnectWatch`."""
    return httpx2.AsyncClient(headers=headers, timeout=_HTTP_TIMEOUT, transport=ConnectWatch())
