"""Send the JSON a provider built to an OpenAI-compatible API, without the SDK's request transform.

The SDK's typed methods (``client.chat.completions.create``) walk every request against its
TypedDicts before sending it (for a 6-message tool-loop request ~1.5 ms of CPU, growing with the
history) and build pydantic objects from every reply and stream chunk. The providers build plain,
valid JSON and read replies as JSON, so `OpenAIConnection.post` sends the body as it is, on the
SDK's own client, in one of two ways:

- **the SDK's low-level path**: ``client.post(path, cast_to=<httpx Response>, body=...)``, the
  SDK's documented call for requests its typed methods do not cover. Everything the client is
  configured with applies (API key, organization, project, base URL, default headers and query,
  timeouts, ``provider`` / ``workload_identity`` authentication), as do per-call
  ``extra_headers``, ``extra_query`` and ``timeout``; the reply comes back as the raw response.
- **direct**: the request the SDK built on that path for a call without per-call options is kept
  as a template (its URL, headers, timeout and other extensions), and later calls to the same
  path send an ``httpx`` request made from it with only the body changed, through the SDK's own
  HTTP client (its connection pool, proxies, event hooks). This is only for clients whose
  requests the SDK builds the same every time: a fixed API key, no client option outside
  `STATIC_CLIENT_OPTIONS`, no custom auth and no idempotency key. The client's cookies are set
  on each request, as the SDK would.

Either way errors are the SDK's: a non-2xx status raises the SDK's status error for it (built by
the client, as ``create`` would), a timeout ``APITimeoutError``, any other transport failure
``APIConnectionError``. ``extra_body`` is merged into the body (its keys win), as the SDK does.

The HTTP client's timeout bounds each read, so a server that sends a byte now and then holds a
request as long as it likes. `OpenAIConnection` also holds a total deadline (``timeout``, or a
call's own ``timeout`` when it is a number): a plain request that has not been answered in
full by then, or a stream that sends no whole event for that long (its opening included),
raises the SDK's ``APITimeoutError`` as a read that times out does, on both ways of sending;
the retry layer names a timeout it gives up on `ProviderTimeout`.
"""

from __future__ import annotations

import functools
import inspect
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any, cast

from promptimus.transport import json_reply
from promptimus.transport.deadline import within
from promptimus.transport.event_stream import EventStream
from promptimus.transport.sdk_errors import SDKErrors

if TYPE_CHECKING:
    from openai import AsyncOpenAI, RequestOptions

__all__ = [
    "STATIC_CLIENT_OPTIONS",
    "TRANSPORT_OPTIONS",
    "OpenAIConnection",
    "deadline",
    "dumps",
    "response_body",
    "unknown_options",
]

STATIC_CLIENT_OPTIONS = frozenset(
    {
        "organization",
        "project",
        "default_headers",
        "default_query",
        "http_client",
        "webhook_secret",
        "websocket_base_url",
    }
)
"""``AsyncOpenAI`` options that leave every request built the same way (so the direct way may
reuse one); with any other option (``provider``, ``workload_identity``...) every request takes
the SDK's low-level path."""

_BEARER: Any = {"security": {"bearer_auth": True}}
"""The authentication the typed methods ask for (an SDK that has no such option ignores it)."""

TRANSPORT_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})
"""Per-call options of the SDK's typed methods that are not body fields."""


@functools.cache
def _keywords(method: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword arguments `method` takes (None: any)."""
    parameters = inspect.signature(method).parameters.values()
    kinds = inspect.Parameter
    if any(p.kind is kinds.VAR_KEYWORD for p in parameters):
        return None
    named = (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)
    return frozenset(p.name for p in parameters if p.kind in named) - {"self"}


def unknown_options(params: Mapping[str, Any], method: Callable[..., Any]) -> list[str]:
    """The keys of ``params`` that the SDK's typed ``method`` would refuse, sorted: sent
    directly, they would reach the server, where the typed method raises ``TypeError``."""
    known = _keywords(method)
    if known is None or known.issuperset(params):
        return []
    return sorted(params.keys() - known)


def _encode(value: Any) -> Any:
    """What the SDK's JSON encoder makes of values the json module does not know."""
    if isinstance(value, date):
        return value.isoformat()
    dump = None if isinstance(value, type) else getattr(value, "model_dump", None)
    if callable(dump):  # a pydantic model, dumped as the SDK dumps one
        return dump(exclude_unset=True, mode="json", by_alias=True)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(body: Any) -> bytes:
    """The request body as the SDK serializes it: compact UTF-8 JSON, NaN refused."""
    return json.dumps(
        body, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_encode
    ).encode()


def response_body(response: Any) -> Any:
    """The decoded body of a raw (httpx) chat-completion response, read as the SDK would read it:
    JSON, or the text of a body that is not JSON and not labelled as JSON (an HTML error page),
    which `completion_to_message` then names. Reading the JSON ourselves skips building the SDK's
    response objects, which `completion_to_message` would only turn back into this JSON. JSON that
    cannot be read (not UTF-8, nested too deeply, a number too long) raises what ``json.loads``
    raised, as the SDK does: `promptimus.transport.json_reply` names it."""
    content_type = response.headers.get("content-type", "").split(";", 1)[0].strip()
    try:
        return json.loads(response.content)
    except ValueError as exc:
        if content_type.endswith("json") or not json_reply.not_json(exc):
            raise  # as the SDK raises it: the retry layer names it a malformed reply
        return response.text


def deadline(timeout: Any) -> float | None:
    """The total deadline (seconds) a ``timeout`` option stands for: a positive finite number
    (an ``httpx.Timeout`` object, None, NaN or inf: none)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        return None
    return float(timeout) if 0 < timeout < float("inf") else None


def _http_module(http_client: Any) -> Any:
    """The httpx package (``httpx2`` for the SDK 3.x default, ``httpx`` before) of a client."""
    for cls in type(http_client).__mro__:
        if cls.__name__ == "AsyncClient":
            return sys.modules[cls.__module__.split(".", 1)[0]]
    raise TypeError(f"{type(http_client).__name__} is not an httpx AsyncClient")


@dataclass(frozen=True, slots=True, repr=False)  # the headers hold the API key
class _Template:
    url: Any
    headers: Any
    extensions: dict[str, Any]


def _template(request: Any) -> _Template:
    headers = request.headers.copy()
    for name in ("content-length", "cookie"):  # the body's own; set afresh from the client
        if name in headers:
            del headers[name]
    return _Template(request.url, headers, dict(request.extensions))


class OpenAIConnection:
    """One event loop's SDK client (``client``) and the HTTP client it sends through (``http``).

    ``direct`` says whether requests may skip the SDK's request building once it built one."""

    __slots__ = (
        "_options",
        "_request",
        "_response",
        "_skipped",
        "_templates",
        "auth_options",
        "client",
        "deadline",
        "direct",
        "errors",
        "http",
    )

    def __init__(
        self,
        client: AsyncOpenAI,
        http: Any,
        *,
        direct: bool,
        send_key: bool = True,
        timeout: float | None = None,
    ) -> None:
        import openai

        self.client = client
        self.deadline = deadline(timeout)
        """Seconds a whole request may take (a stream: each event), or None."""
        self.auth_options: dict[str, Any] = (
            {} if send_key else {"headers": {"Authorization": openai.Omit()}}
        )
        """Request options that keep a placeholder key (a server that takes none) unsent."""
        self._options: dict[str, Any] = {**_BEARER, **self.auth_options}
        self.http = http
        module = _http_module(http)
        self._response = module.Response
        self._request = module.Request
        self.errors = SDKErrors(module)
        self.direct = (
            direct
            and client.custom_auth is None
            # a client that sends an idempotency key builds each request with a new one
            and not getattr(client, "_idempotency_header", None)
            and callable(getattr(client, "_make_status_error_from_response", None))
        )
        self._templates: dict[str, _Template] = {}
        self._skipped = tuple(
            kind
            for kind in (getattr(openai, "NotGiven", None), getattr(openai, "Omit", None))
            if isinstance(kind, type)
        )

    async def post(self, path: str, params: dict[str, Any], *, stream: bool = False) -> Any:
        """Send ``params`` (body fields, plus any of `TRANSPORT_OPTIONS`) to ``path``; the
        response, read unless ``stream`` (then `event_stream` reads it)."""
        body, options = params, None
        if not TRANSPORT_OPTIONS.isdisjoint(params) or self._has_skipped(params):
            body, options = self._split(params)
        return await self.post_body(path, body, options, stream=stream)

    async def post_body(
        self,
        path: str,
        body: dict[str, Any],
        options: dict[str, Any] | None = None,
        *,
        stream: bool = False,
    ) -> Any:
        """Send ``body`` as it is (every key a body field) to ``path`` with the SDK's request
        ``options`` (``headers``, ``params``, ``timeout``); the response, read unless
        ``stream``. The whole request (a stream: up to its headers) is bounded by the total
        deadline, or the call's own ``timeout``."""
        limit = self.deadline
        if options is not None and "timeout" in options:
            limit = deadline(options["timeout"])
        return await self.within(limit, self._post_body(path, body, options, stream))

    async def within(self, limit: float | None, work: Any) -> Any:
        """Await ``work`` within ``limit`` seconds (None: no limit); past it, the SDK's
        ``APITimeoutError``, as a read that times out raises (the retry layer names a timeout
        it gives up on `ProviderTimeout`)."""
        return await within(limit, work, self._timed_out)

    def _timed_out(self) -> BaseException:
        error: BaseException = self.errors.APITimeoutError(
            request=self._request("POST", self.client.base_url)
        )
        return error

    def limit_of(self, params: dict[str, Any]) -> float | None:
        """The total deadline of a call given ``params`` (its own ``timeout``, else ours)."""
        if "timeout" in params and not isinstance(params["timeout"], self._skipped):
            return deadline(params["timeout"])
        return self.deadline

    async def _post_body(
        self, path: str, body: dict[str, Any], options: dict[str, Any] | None, stream: bool
    ) -> Any:
        if options is None:
            template = self._templates.get(path)
            if template is not None:
                return await self._send(template, body, stream)
        response = await self.client.post(
            path,
            cast_to=self._response,
            body=body,
            options=cast("RequestOptions", self._merged(options) if options else self._options),
            stream=stream,
        )
        if options is None and self.direct:
            self._templates[path] = _template(response.request)
        return response

    def _merged(self, options: dict[str, Any]) -> dict[str, Any]:
        merged = {**self._options, **options}
        if "headers" in self.auth_options and "headers" in options:  # theirs win
            merged["headers"] = {**self.auth_options["headers"], **options["headers"]}
        return merged

    @property
    def direct_paths(self) -> frozenset[str]:
        """The paths whose requests now go out directly (the SDK built one for each)."""
        return frozenset(self._templates)

    def event_stream(self, response: Any, limit: float | None = None) -> EventStream:
        """The events of a streamed ``response``; each must arrive whole within ``limit``."""
        return EventStream(response, self.errors, limit)

    def _has_skipped(self, params: dict[str, Any]) -> bool:
        skipped = self._skipped
        return any(isinstance(value, skipped) for value in params.values())

    def _split(self, params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The body (``extra_body`` merged in, NotGiven / Omit values left out) and the
        request options (None when there are none)."""
        skipped = self._skipped
        body = {
            key: value
            for key, value in params.items()
            if key not in TRANSPORT_OPTIONS and not isinstance(value, skipped)
        }
        extra_body = params.get("extra_body")
        if extra_body:
            body.update(extra_body)
            body = {k: v for k, v in body.items() if not isinstance(v, skipped)}
        options: dict[str, Any] = {}
        for name, option in (("extra_headers", "headers"), ("extra_query", "params")):
            if params.get(name) is not None:
                options[option] = params[name]
        if "timeout" in params and not isinstance(params["timeout"], skipped):
            options["timeout"] = params["timeout"]
        return body, options or None

    async def _send(self, template: _Template, body: dict[str, Any], stream: bool) -> Any:
        request = self._request(
            "POST",
            template.url,
            headers=template.headers,
            cookies=self.http.cookies,
            content=dumps(body),
            extensions=template.extensions,
        )
        errors = self.errors
        try:
            response = await self.http.send(request, stream=stream)
        except errors.timeouts as exc:
            raise errors.APITimeoutError(request=request) from exc
        except errors.connection_errors as exc:
            raise errors.APIConnectionError(request=request) from exc
        if not response.is_success:
            if not response.is_closed:
                await response.aread()
            raise self.client._make_status_error_from_response(response) from None
        return response
