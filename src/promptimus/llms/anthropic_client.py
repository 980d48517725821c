"""Lazy construction of the official ``anthropic.AsyncAnthropic`` client, one per event loop.

The client is built on first use (so ``import promptimus`` never imports ``anthropic``), with the
SDK's own retries off (``RetryPolicy`` is the one retry layer). Requests go out on the SDK's
low-level path, ``client.post("/v1/messages", cast_to=<httpx Response>, body=...)``: the body is
the JSON the provider built, sent without the typed method's request transform, and the reply is
read as JSON instead of being built into the SDK's objects. Everything the client is configured
with applies (the key, ``anthropic-version``, base URL, default headers, timeouts), and errors
are the SDK's own (``RateLimitError``, ``OverloadedError``...).
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from typing import Any

from promptimus.errors import OptionalDependencyMissing, ProviderConfigError
from promptimus.transport.deadline import EventDeadline, within
from promptimus.transport.event_stream import SSEDecoder
from promptimus.transport.keyed_client import KeyedClientFactory
from promptimus.transport.openai_wire import deadline, dumps
from promptimus.transport.redirect_guard import guard_redirects
from promptimus.transport.secret_scrub import shown_url

__all__ = ["MESSAGES_PATH", "AnthropicClientFactory", "AnthropicConnection", "StreamError"]

MESSAGES_PATH = "/v1/messages"

_TRANSPORT_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})

_STREAM_STATUS = {
    "overloaded_error": 529,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
}


class StreamError(Exception):
    """An ``error`` event inside a Messages stream, with the HTTP status its type stands for
    (``overloaded_error`` 529...), so the retry layer classifies it as it would the status."""

    def __init__(self, body: dict[str, Any], response: Any) -> None:
        error = body.get("error")
        fields = error if isinstance(error, dict) else {}
        message = fields.get("message")
        self.message = message if isinstance(message, str) and message else "error in the stream"
        super().__init__(self.message)
        self.body = body
        self.response = response
        self.status_code = _STREAM_STATUS.get(str(fields.get("type")), 500)


STATIC_CLIENT_OPTIONS = frozenset({"default_headers", "default_query", "http_client"})
"""``AsyncAnthropic`` options that leave every request built the same way, so the request the
SDK built once may be reused (see `AnthropicConnection`)."""


class AnthropicConnection:
    """One event loop's SDK client, and how to post a Messages request through it.

    The first request without per-call options goes through the SDK's low-level path; when
    ``direct``, the request it built there (URL, headers, timeout) is kept as a template and
    later requests are that template with only the body changed, sent through the SDK's own
    HTTP client, as `promptimus.transport.openai_wire` does for the openai SDK: only for a
    client with a fixed API key, no credentials provider and no option outside
    `STATIC_CLIENT_OPTIONS`. Errors stay the SDK's: a status error built by the client, a
    timeout ``APITimeoutError``, another transport failure ``APIConnectionError``.

    ``timeout`` (seconds) is also a total deadline, as on `OpenAIConnection`: a plain request
    not answered in full by then, or a stream whose opening or next event (pings aside) takes
    that long, raises ``APITimeoutError`` (a call's own numeric ``timeout`` overrides it)."""

    __slots__ = (
        "_errors",
        "_request",
        "_template",
        "client",
        "deadline",
        "direct",
        "http",
        "response_cls",
    )

    def __init__(
        self, client: Any, http: Any, *, direct: bool, timeout: float | None = None
    ) -> None:
        import anthropic

        self.client = client
        self.deadline = deadline(timeout)
        """Seconds a whole request may take (a stream: its opening, then each event), or None."""
        self.http = http
        self.response_cls = _response_class(http)
        module = sys.modules[self.response_cls.__module__.split(".", 1)[0]]
        self._request = module.Request
        self._errors = (module.TimeoutException, module.RequestError, anthropic)
        self.direct = (
            direct
            and getattr(client, "custom_auth", None) is None
            and callable(getattr(client, "_make_status_error_from_response", None))
        )
        self._template: tuple[Any, Any, dict[str, Any]] | None = None

    def limit_of(self, params: dict[str, Any]) -> float | None:
        """The total deadline of a call given ``params`` (its own ``timeout``, else ours)."""
        return deadline(params["timeout"]) if "timeout" in params else self.deadline

    def timed_out(self) -> BaseException:
        """The SDK's error for a request past its deadline (as for a read that times out)."""
        sdk = self._errors[2]
        error: BaseException = sdk.APITimeoutError(
            request=self._request("POST", str(self.client.base_url))
        )
        return error

    async def post(self, params: dict[str, Any], *, stream: bool = False) -> Any:
        """Send ``params`` (body fields, plus any of ``extra_headers`` / ``extra_query`` /
        ``extra_body`` / ``timeout``); the raw response, unread when ``stream``. The whole
        request (a stream: up to its headers) is bounded by `limit_of` ``params``."""
        return await within(self.limit_of(params), self._post(params, stream), self.timed_out)

    def events(self, response: Any, params: dict[str, Any]) -> AsyncGenerator[Any, None]:
        """The events of a streamed ``response``, each within `limit_of` ``params``."""
        return read_events(response, EventDeadline(self.limit_of(params), self.timed_out))

    async def _post(self, params: dict[str, Any], stream: bool) -> Any:
        body, options = params, None
        if not _TRANSPORT_OPTIONS.isdisjoint(params):
            body = {k: v for k, v in params.items() if k not in _TRANSPORT_OPTIONS}
            body.update(params.get("extra_body") or {})
            options = {}
            if params.get("extra_headers"):
                options["headers"] = params["extra_headers"]
            if params.get("extra_query"):
                options["params"] = params["extra_query"]
            if "timeout" in params:
                options["timeout"] = params["timeout"]
        elif self._template is not None:
            return await self._send(self._template, body, stream)
        response = await self.client.post(
            MESSAGES_PATH,
            cast_to=self.response_cls,
            body=body,
            options=options or {},
            stream=stream,
        )
        if options is None and self.direct:
            request = response.request
            headers = request.headers.copy()
            for name in ("content-length", "cookie"):  # the body's own; set afresh per request
                if name in headers:
                    del headers[name]
            self._template = (request.url, headers, dict(request.extensions))
        return response

    async def _send(
        self, template: tuple[Any, Any, dict[str, Any]], body: dict[str, Any], stream: bool
    ) -> Any:
        url, headers, extensions = template
        request = self._request(
            "POST",
            url,
            headers=headers,
            cookies=self.http.cookies,
            content=dumps(body),
            extensions=extensions,
        )
        timeouts, failures, sdk = self._errors
        try:
            response = await self.http.send(request, stream=stream)
        except timeouts as exc:
            raise sdk.APITimeoutError(request=request) from exc
        except failures as exc:
            raise sdk.APIConnectionError(request=request) from exc
        if not response.is_success:
            if not response.is_closed:
                await response.aread()
            raise self.client._make_status_error_from_response(response) from None
        return response


def _response_class(http_client: Any) -> Any:
    """The ``Response`` class of the httpx package the SDK's HTTP client comes from."""
    for cls in type(http_client).__mro__:
        if cls.__name__ == "AsyncClient":
            return sys.modules[cls.__module__.split(".", 1)[0]].Response
    raise TypeError(f"{type(http_client).__name__} is not an httpx AsyncClient")


async def read_events(
    response: Any, clock: EventDeadline | None = None
) -> AsyncGenerator[Any, None]:
    """The decoded events of a Messages event stream, up to its ``message_stop`` (whatever a
    server sends after it, pings included, is not read); an ``error`` event raises
    `StreamError`. With a ``clock``, each event must arrive within its limit of the one before
    (a ``ping`` says the connection is alive, not that the reply moves on: it does not restart
    the clock, so a server that only pings ends by the deadline). The response is closed at
    the end, on an error, and when the caller stops early."""
    decoder = SSEDecoder()
    clock = clock or EventDeadline(None, TimeoutError)
    body = response.aiter_bytes()
    try:
        while (piece := await clock.next(body, None)) is not None:
            for data in decoder.feed(piece):
                event = json.loads(data)
                kind = event.get("type") if isinstance(event, dict) else None
                if kind == "error":
                    raise StreamError(event, response)
                if kind == "ping":
                    continue
                clock.restart()
                yield event
                if kind == "message_stop":
                    return
        for data in decoder.finish():
            yield json.loads(data)
    finally:
        await response.aclose()


class AnthropicClientFactory(KeyedClientFactory[AnthropicConnection]):
    """Holds the connection settings and hands out the client of the running event loop.

    ``api_key`` falls back to the ``api_key_env`` variable when the client is first needed; a
    missing key raises ``ProviderConfigError`` naming that variable before any request. The key
    is never shown by ``repr``."""

    __slots__ = ()

    def api_key(self) -> str:
        key = self._find_key()
        if not key:
            where = f" for {shown_url(self.base_url)}" if self.base_url else ""
            raise ProviderConfigError(
                f"No Anthropic API key{where}: set the {self.api_key_env or 'ANTHROPIC_API_KEY'} "
                "environment variable or pass api_key=... to the provider."
            )
        return key

    def _build(self) -> AnthropicConnection:
        key = self.api_key()
        try:
            import anthropic
        except ImportError as exc:
            raise OptionalDependencyMissing(
                "Anthropic needs the anthropic package: pip install 'promptimus[anthropic]'."
            ) from exc

        kwargs = self._sdk_kwargs(key)
        if "http_client" not in kwargs:
            # the SDK's default HTTP client without its wrapper, dropped with its event loop
            # (see `promptimus.transport.openai_client` for why)
            kwargs["http_client"] = anthropic.DefaultAsyncHttpxClient()
        guard_redirects(kwargs["http_client"])
        direct = self.client_kwargs.keys() <= STATIC_CLIENT_OPTIONS
        return AnthropicConnection(
            anthropic.AsyncAnthropic(**kwargs),
            kwargs["http_client"],
            direct=direct,
            timeout=self.timeout,
        )
