"""What a test scripts into the fake server: replies, tool calls, faults, and their queues."""

from __future__ import annotations

import inspect
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from promptimus.testing.context_overflow import context_overflow_body

__all__ = [
    "CONTEXT_DIALECTS",
    "REJECTION_DIALECTS",
    "ContextDialect",
    "Fault",
    "RecordedRequest",
    "Reply",
    "ResponseFormatRejection",
    "Route",
    "ToolCall",
]


@dataclass(slots=True)
class ToolCall:
    """A tool call the fake model makes. ``dict`` arguments are sent JSON-encoded.

    ``id`` defaults to ``call_1``, ``call_2``, ... numbered per server in the order sent.
    ``extra_content`` is sent on the call as it is (Gemini's OpenAI-compatible endpoint puts
    ``{"google": {"thought_signature": ...}}`` there).
    """

    name: str
    arguments: str | dict[str, Any] = "{}"
    id: str | None = None
    extra_content: dict[str, Any] | None = None


@dataclass(slots=True)
class Reply:
    """One chat completion. A plain ``str`` script item means ``Reply(content=that_str)``.

    ``reasoning`` is sent as ``reasoning_content`` (DeepSeek / vLLM style). ``usage`` is a dict or
    object with ``prompt_tokens``, ``completion_tokens``, ``total_tokens``, ``cached_tokens``,
    ``reasoning_tokens`` (missing ones are computed); ``None`` computes whitespace-token counts.
    ``finish_reason`` defaults to ``"tool_calls"`` when there are tool calls, else ``"stop"``;
    ``model`` defaults to the requested model.
    """

    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    reasoning: str | None = None
    usage: Any = None
    finish_reason: str | None = None
    model: str | None = None


FaultKind = Literal[
    "status",
    "delay",
    "stall",
    "malformed",
    "drop",
    "cut",
    "stream_error",
    "echo_key",
    "raw",
    "drip",
    "redirect",
]

ContextDialect = Literal["openai", "llama.cpp", "vllm"]
CONTEXT_DIALECTS: tuple[ContextDialect, ...] = ("openai", "llama.cpp", "vllm")
"""The context-window error bodies the fake server can send (see `Fault.context_overflow`)."""

RejectionDialect = Literal["llama-cpp-python", "fastapi", "pydantic", "openai", "vllm", "ollama"]
REJECTION_DIALECTS: tuple[RejectionDialect, ...] = (
    "llama-cpp-python",
    "fastapi",
    "pydantic",
    "openai",
    "vllm",
    "ollama",
)
"""The request-validation error bodies the fake server can send (see `Fault.request_rejected`
and `promptimus.testing.payloads.rejection_body` for what each looks like)."""


@dataclass(frozen=True, slots=True)
class Fault:
    """A failure to inject, scripted like any reply on any route. Build one with a constructor:

    - ``Fault.status(429, retry_after=2.5)``: an error status with an OpenAI-shaped JSON body
      (or ``body``); ``retry_after`` seconds become ``Retry-After`` (whole seconds, rounded up)
      and ``retry-after-ms`` headers.
    - ``Fault.delay(1.0, then=item)``: wait, then answer with ``then`` (default reply if None).
    - ``Fault.stall(after_chunks=N)``: a stream sends N chunks then hangs; a plain request hangs
      before answering. The server waits until the client gives up or the server stops.
    - ``Fault.malformed(kind="invalid_json", after_chunks=0)``: a ``200 OK`` whose body is not a
      valid reply, in one of the shapes real servers and proxies send: not JSON, an HTML or text
      page, a JSON list, ``{}``, ``choices: null`` / ``[]`` / ``"abc"``, ``message: null``, a
      wrongly typed field, a well-formed reply with nothing in it... ``MALFORMED_KINDS`` lists
      every kind and the routes it applies to (chat, embeddings, rerank); the comments in
      ``promptimus.testing.malformed`` say what each sends. A stream replaces its chunk number
      ``after_chunks`` with the malformed one and goes on (``html`` / ``text`` answer the
      stream request with the page itself; ``empty_answer`` / ``empty_length`` /
      ``no_choices`` are whole streams).
    - ``Fault.echo_key(status=401)``: an error status whose body quotes back the API key the
      request was sent with (``Authorization: Bearer ...``), as servers that name the rejected
      key do; checks that the key never reaches a traceback or a log.
    - ``Fault.drop(after_chunks=0)``: close the connection without a response (or mid-stream).
    - ``Fault.cut(after_chunks=N)``: a server that dies mid-reply. A stream sends N chunks
      (default: every chunk before the finish chunk) and ends with neither its finish chunk nor
      ``[DONE]``; with ``clean=True`` (default) the HTTP
      body ends properly (the client sees a normal end of stream: what older llama.cpp builds
      did after an error), with ``clean=False`` the connection closes in the middle of the body.
      A plain request gets a 200 whose JSON body stops halfway before the connection closes.
    - ``Fault.stream_error(body, after_chunks=N)``: a stream sends N chunks, then the error
      ``body`` as an SSE event and ends without ``[DONE]``. ``sse_field="data"`` sends
      ``data: {"error": body}`` (llama.cpp today, vLLM: the openai SDK raises it);
      ``sse_field="error"`` sends llama.cpp's former ``error: {...}`` line, which SSE clients
      (the openai SDK included) skip. A plain request gets ``status_code`` with the body.
    - ``Fault.context_overflow(n_ctx=4096, n_prompt_tokens=5000, dialect="openai")``: the error
      a server sends for a prompt larger than the context window, in the ``dialect`` of OpenAI
      (``code: context_length_exceeded``), llama.cpp (``type: exceed_context_size_error`` with
      ``n_ctx`` / ``n_prompt_tokens``) or vLLM ("This model's maximum context length is ...");
      ``mid_stream=True`` sends it inside a started stream, as servers that check late do.
    - ``Fault.request_rejected(dialect="llama-cpp-python", field="response_format.type")``:
      the answer to a request whose ``field`` fails the server's validation, in one of
      ``REJECTION_DIALECTS``; the default is llama-cpp-python's HTTP 500 to
      ``response_format: json_schema``, verbatim.

    - ``Fault.raw(body, content_type=None)``: a ``200 OK`` whose body is exactly the bytes
      ``body`` (a plain request: labelled ``application/json`` unless ``content_type`` says
      otherwise; a stream: the whole event stream, labelled ``text/event-stream``), for bytes
      no other fault sends: not UTF-8, nested past any limit, a number of 5,000 digits...
    - ``Fault.drip(every=0.5)``: the reply a request would get, sent one byte every ``every``
      seconds (a plain request announces its whole length first), for as long as the client
      keeps reading: a server that holds a call open by sending slowly.
    - ``Fault.template_error(attribute="content")``: the HTTP 500 llama-cpp-python's server
      sends when its chat template reads a field a message lacks (``'dict object' has no
      attribute 'content'``: an assistant turn sent without ``content``), verbatim.
    - ``Fault.redirect(location, status=307)``: a redirect to ``location`` (a whole URL: another
      server's, to check that no credential follows the request there).

    A server-wide behaviour (every request, not one scripted reply) is set on the server
    instead: ``FakeOpenAIServer(reject_response_format=...)`` (see `ResponseFormatRejection`)
    and ``FakeOpenAIServer(context_window=N)``.
    """

    kind: FaultKind
    status_code: int = 500
    retry_after: float | None = None
    body: Any = None
    seconds: float = 0.0
    then: Any = None
    after_chunks: int | None = 0
    clean: bool = True
    sse_field: str = "data"
    content_type: str | None = None

    @classmethod
    def status(cls, code: int, retry_after: float | None = None, body: Any = None) -> Fault:
        return cls("status", status_code=code, retry_after=retry_after, body=body)

    @classmethod
    def delay(cls, seconds: float, then: Any = None) -> Fault:
        return cls("delay", seconds=seconds, then=then)

    @classmethod
    def stall(cls, after_chunks: int = 0) -> Fault:
        return cls("stall", after_chunks=after_chunks)

    @classmethod
    def malformed(cls, kind: str = "invalid_json", after_chunks: int = 0) -> Fault:
        from promptimus.errors import InvalidArgument
        from promptimus.testing.malformed import MALFORMED_KINDS

        if kind not in MALFORMED_KINDS:
            raise InvalidArgument(
                f"unknown malformed kind {kind!r}; use one of {', '.join(MALFORMED_KINDS)}"
            )
        return cls("malformed", body=kind, after_chunks=after_chunks)

    @classmethod
    def raw(cls, body: bytes, content_type: str | None = None) -> Fault:
        return cls("raw", status_code=200, body=bytes(body), content_type=content_type)

    @classmethod
    def drip(cls, every: float = 0.5) -> Fault:
        return cls("drip", seconds=every)

    @classmethod
    def template_error(cls, attribute: str = "content") -> Fault:
        return cls.status(
            500,
            body={
                "error": {
                    "message": f"'dict object' has no attribute '{attribute}'",
                    "type": "internal_server_error",
                    "param": None,
                    "code": None,
                }
            },
        )

    @classmethod
    def redirect(cls, location: str, status: int = 307) -> Fault:
        return cls("redirect", status_code=status, body=location)

    @classmethod
    def echo_key(cls, status: int = 401) -> Fault:
        return cls("echo_key", status_code=status)

    @classmethod
    def drop(cls, after_chunks: int = 0) -> Fault:
        return cls("drop", after_chunks=after_chunks)

    @classmethod
    def cut(cls, after_chunks: int | None = None, *, clean: bool = True) -> Fault:
        return cls("cut", after_chunks=after_chunks, clean=clean)

    @classmethod
    def stream_error(
        cls,
        body: Any = None,
        after_chunks: int = 0,
        *,
        sse_field: Literal["data", "error"] = "data",
        status_code: int = 500,
    ) -> Fault:
        if body is None:
            body = {"message": "fake server: error while generating", "type": "server_error"}
        return cls(
            "stream_error",
            status_code=status_code,
            body=body,
            after_chunks=after_chunks,
            sse_field=sse_field,
        )

    @classmethod
    def context_overflow(
        cls,
        n_ctx: int = 4096,
        n_prompt_tokens: int = 5000,
        dialect: ContextDialect = "openai",
        *,
        mid_stream: bool = False,
    ) -> Fault:
        status, body = context_overflow_body(dialect, n_ctx, n_prompt_tokens)
        if mid_stream:
            inner = body.get("error", body)
            return cls.stream_error(inner, status_code=status)
        return cls.status(status, body=body)

    @classmethod
    def request_rejected(
        cls,
        dialect: RejectionDialect = "llama-cpp-python",
        field: str = "response_format.type",
        value: Any = "json_schema",
    ) -> Fault:
        from promptimus.testing.rejections import rejection_body

        status, body = rejection_body(dialect, field, value)
        return cls.status(status, body=body)


@dataclass(frozen=True, slots=True)
class ResponseFormatRejection:
    """Make the fake server reject every chat request whose ``response_format`` type is in
    ``types``, as servers without structured outputs do, before consuming any scripted reply:

        FakeOpenAIServer(reject_response_format=ResponseFormatRejection({"json_schema"}))
        FakeOpenAIServer(reject_response_format=["json_schema", "json_object"])  # same, 400

    ``status`` and ``body`` set the answer (default: 400 with an ``invalid_request_error``
    naming the format); e.g. ``status=500`` with a ``{"detail": [...]}`` body imitates a
    server that reports request validation errors as server errors.
    ``ResponseFormatRejection.dialect("llama-cpp-python")`` answers as that server does (its
    verbatim HTTP 500), and likewise for every name in ``REJECTION_DIALECTS``. The rejected
    request is still recorded in ``server.requests`` and ``server.chat.requests``.
    """

    types: frozenset[str] | set[str] | tuple[str, ...] = frozenset({"json_schema"})
    status: int = 400
    body: Any = None

    @classmethod
    def dialect(
        cls,
        dialect: RejectionDialect,
        types: frozenset[str] | set[str] | tuple[str, ...] = frozenset({"json_schema"}),
    ) -> ResponseFormatRejection:
        """Reject ``response_format`` ``types`` as the server of ``dialect`` does (the body
        names the first type of ``types`` in sorted order when it quotes the value)."""
        from promptimus.testing.rejections import rejection_body

        types = frozenset(types)
        status, body = rejection_body(dialect, "response_format.type", min(types))
        return cls(types, status, body)

    def rejects(self, body: dict[str, Any]) -> str | None:
        """The rejected ``response_format`` type of a request body, or None if accepted."""
        fmt = body.get("response_format")
        kind = fmt.get("type") if isinstance(fmt, dict) else None
        return kind if isinstance(kind, str) and kind in self.types else None


@dataclass(slots=True)
class RecordedRequest:
    """One request as the server received it. ``json`` is None when the body was not JSON;
    ``body`` is the body's bytes as sent."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any = None
    query: str = ""
    body: bytes = b""


Responder = Callable[[dict[str, Any]], Any | Awaitable[Any]]


class Route:
    """The replies of one endpoint: a FIFO script, then a fallback responder, then the default.

    ``script(*items)`` queues items (one consumed per request); ``respond_with(fn)`` sets the
    fallback called with the request body when the script is empty (``fn`` may be async and may
    return None to get the default). ``requests`` holds every request body this route received.
    Async responders run on the server's own event loop thread.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.requests: list[dict[str, Any]] = []
        self._queue: deque[Any] = deque()
        self._responder: Responder | None = None
        self._lock = threading.Lock()

    def script(self, *items: Any) -> Route:
        for item in items:
            if isinstance(item, Fault) and item.kind == "malformed":
                from promptimus.errors import InvalidArgument
                from promptimus.testing.malformed import MALFORMED_KINDS, ROUTES, not_applicable

                if self.name in ROUTES and self.name not in MALFORMED_KINDS[item.body]:
                    raise InvalidArgument(not_applicable(item.body, self.name) + ".")
        with self._lock:
            self._queue.extend(items)
        return self

    def respond_with(self, fn: Responder | None) -> Route:
        self._responder = fn
        return self

    def clear(self) -> None:
        """Forget the recorded requests, the queued items and the responder."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self._responder = None

    @property
    def pending(self) -> int:
        """How many scripted items are still queued."""
        return len(self._queue)

    def _record(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    async def _next_item(self, body: dict[str, Any]) -> Any:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        responder = self._responder
        if responder is None:
            return None
        item = responder(body)
        if inspect.isawaitable(item):
            item = await item
        return item

    def __repr__(self) -> str:
        return f"Route({self.name!r}, pending={self.pending}, requests={len(self.requests)})"
