"""A fake OpenAI-compatible HTTP server on 127.0.0.1 that the real ``openai`` SDK talks to.

    with FakeOpenAIServer() as srv:
        srv.chat.script("Hello!", Reply(tool_calls=[ToolCall("add", {"a": 1})]), Fault.status(429))
        client = openai.OpenAI(base_url=srv.base_url, api_key=srv.api_key)

Faults (see `Fault`) are scripted like replies: error statuses, delays, stalls, malformed 200
replies of many shapes (``Fault.malformed(kind)``, see ``MALFORMED_KINDS``), errors that quote the
API key back (``Fault.echo_key``), dropped connections, streams cut before their finish chunk
(``Fault.cut``), errors sent inside a stream (``Fault.stream_error``) and context-window errors in
the OpenAI, llama.cpp or vLLM dialect (``Fault.context_overflow``). Two server-wide behaviours
imitate real servers: ``reject_response_format`` (e.g. ``["json_schema"]``, like llama-cpp-python's
server: see `ResponseFormatRejection`) and ``context_window`` (reject any chat request whose prompt,
at one token per word, plus its ``max_tokens`` exceeds it, in the ``context_dialect``'s error
format).

Endpoints: ``POST /v1/chat/completions`` (JSON or SSE), ``POST /v1/embeddings``, ``GET /v1/models``,
``POST /v1/rerank``, ``POST /v1/responses`` (OpenAI's Responses API, JSON or SSE: see
`promptimus.testing.fake_openai_responses`), and the Batch API's ``/v1/files`` and
``/v1/batches`` (see `promptimus.testing.fake_openai_batches`). With nothing scripted, chat answers
``"echo: <last user message>"``, embeddings are hashed lexical vectors
(`promptimus.embedders.hashing`) and rerank scores by word overlap.

The server runs its own event loop in a daemon thread, both as a sync and as an async context
manager, so sync clients in async tests cannot deadlock it. For benchmarks, where the client must
not share a GIL with the server, run it as a subprocess:
``python -m promptimus.testing.fake_openai --port 0`` or ``FakeOpenAIServer.spawn()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from promptimus.errors import FakeServerError
from promptimus.testing import payloads
from promptimus.testing.background import (
    BackgroundServer,
    SpawnedServer,
    serve_from_command_line,
    spawn_server,
)
from promptimus.testing.captured_answer import capture
from promptimus.testing.fake_openai_batches import OpenAIBatches
from promptimus.testing.fake_openai_responses import ResponsesRoute
from promptimus.testing.http import HttpConnection, HttpRequest, HttpServer
from promptimus.testing.malformed import (
    MALFORMED_KINDS,
    malformed_body,
    malformed_stream,
    not_applicable,
)
from promptimus.testing.script import (
    ContextDialect,
    Fault,
    RecordedRequest,
    ResponseFormatRejection,
    Route,
)
from promptimus.testing.tool_sequence import orphan_tool_error

__all__ = ["FakeOpenAIServer", "SpawnedServer", "main"]

_DUMMY_KEY = "sk-fake"


class FakeOpenAIServer(BackgroundServer):
    """A scripted OpenAI-compatible server. Start it with ``with`` / ``async with`` or `start`.

    - ``models``: model ids listed by ``GET /v1/models`` (besides every model requested so far).
    - ``default_reply``: chat text to send when nothing is scripted, instead of the echo.
    - ``latency``: seconds added before every response (a slow but healthy server).
    - ``require_auth``: answer 401 unless ``Authorization: Bearer <api_key>`` is sent.
    - ``record``: keep every request in ``requests`` / ``route.requests`` (off for long benchmarks,
      where the lists would only grow).
    - ``reject_response_format``: ``response_format`` types to reject (a `ResponseFormatRejection`
      or just the type names, answered with 400).
    - ``context_window``: reject chat requests larger than this many tokens (one per word, plus
      ``max_tokens``) with the context-window error of ``context_dialect`` ("openai",
      "llama.cpp" or "vllm"). Both can also be set on a running server.
    - ``reject_orphans``: answer 400, as the OpenAI API does, a chat request whose ``tool``
      message answers no call of the assistant message before it, or whose assistant message
      has a call no ``tool`` message answers (on by default; off for a server that lets them
      through).

    ``in_flight`` counts the requests being answered right now and ``max_in_flight`` the most
    at once since the start (or the last `clear`): what a test checks a concurrency cap against.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str = _DUMMY_KEY,
        models: tuple[str, ...] | list[str] = ("fake-model", "fake-embedding"),
        default_reply: str | None = None,
        latency: float = 0.0,
        require_auth: bool = False,
        record: bool = True,
        reject_response_format: ResponseFormatRejection | Iterable[str] | None = None,
        context_window: int | None = None,
        context_dialect: ContextDialect = "openai",
        reject_orphans: bool = True,
    ) -> None:
        self.host = host
        self.api_key = api_key
        self.default_reply = default_reply
        self.latency = latency
        self.require_auth = require_auth
        self.record = record
        if reject_response_format is not None and not isinstance(
            reject_response_format, ResponseFormatRejection
        ):
            reject_response_format = ResponseFormatRejection(frozenset(reject_response_format))
        self.reject_response_format: ResponseFormatRejection | None = reject_response_format
        self.context_window = context_window
        self.context_dialect: ContextDialect = context_dialect
        self.reject_orphans = reject_orphans
        self.chat = Route("chat")
        self.embeddings = Route("embeddings")
        self.rerank = Route("rerank")
        self.responses = ResponsesRoute()
        self.batches = OpenAIBatches(self._answer_batch_line)
        """The Batch API (``/v1/files``, ``/v1/batches``): see `OpenAIBatches`."""
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.dripped: list[int] = []
        """Per reply sent with `Fault.drip`, how many of its bytes went out before it ended."""
        self._models: dict[str, None] = dict.fromkeys(models)
        self._requested_port = port
        self._port: int | None = None
        self._http = HttpServer(self._counted)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None
        self._ids = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._routes = {
            "/v1/chat/completions": ("POST", self._chat),
            "/v1/embeddings": ("POST", self._embeddings),
            "/v1/rerank": ("POST", self._rerank),
            "/v1/responses": ("POST", self._responses),
            "/v1/models": ("GET", self._list_models),
        }

    # --- lifecycle (start, stop, with: BackgroundServer) ---------------------------------------

    _label = "fake OpenAI"

    @property
    def port(self) -> int:
        if self._port is None:
            raise FakeServerError("The fake server is not running; start it with `with` first.")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._port is not None

    async def _start_http(self) -> int:
        self._stopping = asyncio.Event()
        return await self._http.start(self.host, self._requested_port)

    async def _stop_http(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        await self._http.close()

    async def serve_forever(self, on_ready: Callable[[str], None] | None = None) -> None:
        """Serve on the current event loop until cancelled; calls ``on_ready(base_url)`` first."""
        self._port = await self._start_http()
        if on_ready is not None:
            on_ready(self.base_url)
        try:
            await asyncio.Event().wait()
        finally:
            await self._stop_http()
            self._port = None

    def clear(self) -> None:
        """Forget every recorded request and every route's script and responder."""
        self.requests.clear()
        self.max_in_flight = self.in_flight
        for route in (self.chat, self.embeddings, self.rerank, self.responses):
            route.clear()
        self.batches.clear()

    @property
    def models(self) -> list[str]:
        return list(self._models)

    def __repr__(self) -> str:
        where = self.base_url if self.running else "stopped"
        return f"FakeOpenAIServer({where})"

    # --- subprocess mode ----------------------------------------------------------------------

    @staticmethod
    def spawn(
        reply: str | None = None, latency_ms: float = 0
    ) -> contextlib.AbstractContextManager[SpawnedServer]:
        """Run the server in a child Python process (own GIL) for the duration of the block."""
        return spawn_server("promptimus.testing.fake_openai", "fake", _DUMMY_KEY, reply, latency_ms)

    # --- dispatch -----------------------------------------------------------------------------

    async def _counted(self, request: HttpRequest, conn: HttpConnection) -> None:
        """Answer one request, counting it in ``in_flight`` until its response is sent."""
        self.in_flight += 1  # only the server's own event loop thread changes the counters
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self._handle(request, conn)
        finally:
            self.in_flight -= 1

    async def _handle(self, request: HttpRequest, conn: HttpConnection) -> None:
        body: Any = None
        bad_json = False
        if request.body:
            try:
                body = json.loads(request.body)
            except ValueError:
                bad_json = True
        if self.record:
            self.requests.append(
                RecordedRequest(
                    request.method, request.path, request.headers, body, request.query, request.body
                )
            )
        if self.require_auth and request.headers.get("authorization") != f"Bearer {self.api_key}":
            await _send_error(conn, 401, "fake server: missing or wrong API key")
            return
        path = request.path.rstrip("/")
        if self.batches.handles(path):
            await self.batches.serve(request, conn)
            return
        route = self._routes.get(path)
        if route is None and path.startswith("/v1/models/"):
            await self._get_model(conn, path.removeprefix("/v1/models/"))
            return
        if route is None:
            await _send_error(conn, 404, f"fake server: no route {request.method} {request.path}")
            return
        method, handler = route
        if request.method != method:
            await _send_error(conn, 405, f"fake server: use {method} for {request.path}")
            return
        if method == "POST":
            if bad_json or not isinstance(body, dict):
                await _send_error(conn, 400, "fake server: the request body must be a JSON object")
                return
            model = body.get("model")
            if isinstance(model, str) and model not in self._models:
                self._models[model] = None
        if self.latency:
            await asyncio.sleep(self.latency)
        try:
            await handler(body, conn)
        except payloads.BadRequest as exc:
            if not conn.responded:
                await _send_error(conn, 400, f"fake server: {exc}")
        except _ResponderFailed as exc:
            await _send_error(conn, 500, f"fake server: {exc}")

    async def _next(self, route: Route, body: dict[str, Any]) -> Any:
        if self.record:
            route._record(body)
        try:
            return await route._next_item(body)
        except Exception as exc:
            raise _ResponderFailed(f"{route.name} responder raised {exc!r}") from exc

    async def _apply_fault(
        self, item: Any, conn: HttpConnection, streaming: bool = False
    ) -> tuple[bool, Any]:
        """Act out faults; returns (answered, item to answer with if not)."""
        while isinstance(item, Fault):
            if item.kind == "delay":
                await asyncio.sleep(item.seconds)
                item = item.then
                continue
            if item.kind == "status":
                await _send_fault_status(conn, item)
            elif item.kind == "echo_key":
                await _send_echoed_key(conn, item.status_code)
            elif item.kind == "redirect":
                await conn.send(item.status_code, b"", headers={"location": item.body})
            elif item.kind == "drop" and not (streaming and item.after_chunks):
                conn.drop()
            elif item.kind == "stall" and not streaming:
                await self._stall(conn)
            elif item.kind == "cut" and not streaming:
                await conn.send_partial(200, _CUT_BODY, len(_CUT_BODY) // 2)
            elif item.kind == "raw":
                await _send_raw(conn, item, streaming)
            elif item.kind == "stream_error" and not streaming:
                body = item.body
                if not (isinstance(body, dict) and ("error" in body or "object" in body)):
                    body = {"error": body}
                await _send_json(conn, body, item.status_code)
            else:
                return False, item  # a streaming fault: the stream acts it out
            return True, None
        return False, item

    async def _stall(self, conn: HttpConnection) -> None:
        conn.responded = True
        conn.closing = True
        await conn.wait_peer_closed()

    async def _refuse(self, body: dict[str, Any], conn: HttpConnection) -> bool:
        """Answer a request the server-wide rules reject; True if it was rejected. The request
        is recorded before the answer goes out, so a client that has the answer can count it."""
        rejection = self.reject_response_format
        kind = rejection.rejects(body) if rejection is not None else None
        if rejection is not None and kind is not None:
            error = rejection.body
            if error is None:
                error = payloads.response_format_rejection_body(kind)
            self._record_refused(body)
            await _send_json(conn, error, rejection.status)
            return True
        orphan = orphan_tool_error(body.get("messages")) if self.reject_orphans else None
        if orphan is not None:
            self._record_refused(body)
            await _send_json(conn, orphan, 400)
            return True
        window = self.context_window
        if window is None:
            return False
        budget = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        needed = payloads.prompt_tokens(body) + (budget if isinstance(budget, int) else 0)
        if needed <= window:
            return False
        status, error = payloads.context_overflow_body(self.context_dialect, window, needed)
        self._record_refused(body)
        await _send_json(conn, error, status)
        return True

    def _record_refused(self, body: dict[str, Any]) -> None:
        if self.record:
            self.chat._record(body)

    async def _chat(self, body: dict[str, Any], conn: HttpConnection) -> None:
        if await self._refuse(body, conn):
            return
        item = await self._next(self.chat, body)
        streaming = bool(body.get("stream"))
        answered, item = await self._apply_fault(item, conn, streaming)
        if answered:
            return
        fault = item if isinstance(item, Fault) else None
        if fault is not None or item is None:
            item = self.default_reply
            if item is None:
                item = payloads.echo_text(body)
        if isinstance(item, dict):
            await _send_json(conn, item)
            return
        try:
            reply = payloads.coerce_reply(item)
        except TypeError as exc:
            await _send_error(conn, 500, f"fake server: {exc}")
            return
        completion_id = f"chatcmpl-fake-{next(self._ids)}"
        if not streaming:
            data = payloads.chat_completion(reply, body, completion_id, self._next_call_id)
            if fault is not None and fault.kind == "malformed":
                await _send_malformed(conn, fault, "chat", data)
            elif fault is not None and fault.kind == "drip":
                raw = json.dumps(data).encode()
                await conn.send_slowly(200, raw, fault.seconds, self._drip_counter())
                conn.close()
            else:
                await _send_json(conn, data)
            return
        chunks = payloads.chat_chunks(reply, body, completion_id, self._next_call_id)
        await self._stream(conn, chunks, fault)

    async def _stream(
        self, conn: HttpConnection, chunks: Iterator[dict[str, Any]], fault: Fault | None
    ) -> None:
        if fault is not None and fault.kind == "malformed":
            await self._malformed_stream(conn, list(chunks), fault)
            return
        if fault is not None and fault.kind == "drip":
            events = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
            conn.closing = True
            await conn.start_stream()
            events += b"data: [DONE]\n\n"
            await conn.drip(events, fault.seconds, self._drip_counter(), chunked=True)
            conn.close()
            return
        await conn.start_stream(headers={"x-request-id": f"req_fake_{next(self._ids)}"})
        limit = fault.after_chunks if fault is not None else None
        for sent, chunk in enumerate(chunks):
            if sent == limit:
                break
            if _is_finish(chunk) and fault is not None and fault.kind == "cut":
                break  # a cut stream never sends its finish chunk
            await conn.send_chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        if fault is None:
            await conn.send_chunk(b"data: [DONE]\n\n")
            await conn.end_stream()
        elif fault.kind == "drop":
            conn.drop()
        elif fault.kind == "cut":
            if fault.clean:
                conn.closing = True
                await conn.end_stream()
            else:
                conn.close()
        elif fault.kind == "stream_error":
            event = {"error": fault.body} if fault.sse_field == "data" else fault.body
            line = f"{fault.sse_field}: {json.dumps(event)}\n\n"
            await conn.send_chunk(line.encode())
            conn.closing = True
            await conn.end_stream()
        else:  # stall: hang until the client gives up or the server stops
            conn.closing = True
            await conn.wait_peer_closed()

    async def _malformed_stream(
        self, conn: HttpConnection, chunks: list[dict[str, Any]], fault: Fault
    ) -> None:
        if "chat" not in MALFORMED_KINDS[fault.body]:
            await _send_error(conn, 500, f"fake server: {not_applicable(fault.body, 'chat')}")
            return
        whole, events = malformed_stream(fault.body, chunks, fault.after_chunks or 0)
        if whole is not None:  # a page where the event stream should be
            await conn.send(200, whole.body, content_type=whole.content_type)
            return
        await conn.start_stream(headers={"x-request-id": f"req_fake_{next(self._ids)}"})
        for event in events:
            await conn.send_chunk(event)
        await conn.end_stream()

    def _drip_counter(self) -> Callable[[], None]:
        """A new entry of ``dripped``, and what counts a byte into it."""
        self.dripped.append(0)
        index = len(self.dripped) - 1

        def sent() -> None:
            self.dripped[index] += 1

        return sent

    async def _answer_batch_line(self, body: dict[str, Any]) -> tuple[int, Any]:
        """One line of a batch, answered as a live chat request would be."""
        return await capture(self._chat, body)

    def _next_call_id(self) -> str:
        return f"call_{next(self._call_ids)}"

    async def _responses(self, body: dict[str, Any], conn: HttpConnection) -> None:
        await self.responses.handle(self, body, conn)

    async def _embeddings(self, body: dict[str, Any], conn: HttpConnection) -> None:
        await self._answer(self.embeddings, payloads.embeddings_response, body, conn)

    async def _rerank(self, body: dict[str, Any], conn: HttpConnection) -> None:
        await self._answer(self.rerank, payloads.rerank_response, body, conn)

    async def _answer(
        self,
        route: Route,
        build: Callable[[dict[str, Any], Any], dict[str, Any]],
        body: dict[str, Any],
        conn: HttpConnection,
    ) -> None:
        """Serve a plain JSON route: a scripted fault, a literal dict, or `build(body, item)`."""
        item = await self._next(route, body)
        answered, item = await self._apply_fault(item, conn)
        if answered:
            return
        if isinstance(item, Fault):  # only a malformed reply is left to act out
            await _send_malformed(conn, item, route.name, build(body, None))
            return
        await _send_json(conn, item if isinstance(item, dict) else build(body, item))

    async def _list_models(self, body: Any, conn: HttpConnection) -> None:
        data = [_model(name) for name in list(self._models)]
        await _send_json(conn, {"object": "list", "data": data})

    async def _get_model(self, conn: HttpConnection, name: str) -> None:
        if name in self._models:
            await _send_json(conn, _model(name))
        else:
            await _send_error(conn, 404, f"fake server: the model {name!r} does not exist")


class _ResponderFailed(Exception):
    pass


_CUT_BODY = json.dumps(
    {
        "id": "chatcmpl-cut",
        "object": "chat.completion",
        "created": payloads.CREATED,
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "This reply was cut off halfway."},
                "finish_reason": "stop",
            }
        ],
    }
).encode()


def _is_finish(chunk: dict[str, Any]) -> bool:
    choices = chunk.get("choices")
    if not choices:
        return False
    return choices[0].get("finish_reason") is not None


def _model(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": payloads.CREATED, "owned_by": "fake"}


async def _send_json(conn: HttpConnection, data: Any, status: int = 200) -> None:
    await conn.send(status, json.dumps(data).encode())


async def _send_error(conn: HttpConnection, status: int, message: str) -> None:
    await _send_json(conn, payloads.error_body(status, message), status)


async def _send_fault_status(conn: HttpConnection, fault: Fault) -> None:
    headers: dict[str, str] = {}
    if fault.retry_after is not None:
        headers["retry-after"] = str(math.ceil(fault.retry_after))
        headers["retry-after-ms"] = str(round(fault.retry_after * 1000))
    body = fault.body if fault.body is not None else payloads.error_body(fault.status_code)
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    await conn.send(fault.status_code, raw, headers=headers)


async def _send_malformed(
    conn: HttpConnection, fault: Fault, route: str, good: dict[str, Any]
) -> None:
    kind = fault.body
    if route not in MALFORMED_KINDS[kind]:
        await _send_error(conn, 500, f"fake server: {not_applicable(kind, route)}")
        return
    spoilt = malformed_body(kind, route, good)
    await conn.send(200, spoilt.body, content_type=spoilt.content_type)


async def _send_raw(conn: HttpConnection, fault: Fault, streaming: bool) -> None:
    if not streaming:
        await conn.send(200, fault.body, content_type=fault.content_type or "application/json")
        return
    conn.closing = True
    await conn.start_stream(content_type=fault.content_type or "text/event-stream")
    await conn.send_chunk(fault.body)
    await conn.end_stream()


async def _send_echoed_key(conn: HttpConnection, status: int) -> None:
    """An error whose body quotes the key the request carried, as some servers do."""
    headers = conn.request.headers if conn.request is not None else {}
    key = headers.get("authorization", "").removeprefix("Bearer ").strip()
    body = payloads.error_body(status, f"Incorrect API key provided: {key}.")
    body["error"]["api_key"] = key
    await _send_json(conn, body, status)


def main(argv: list[str] | None = None) -> None:
    serve_from_command_line(
        FakeOpenAIServer, "promptimus.testing.fake_openai", "a fake OpenAI-compatible API", argv
    )


if __name__ == "__main__":
    main()
