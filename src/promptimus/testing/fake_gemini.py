"""A fake Gemini API (v1beta) on 127.0.0.1 that the real google-genai SDK talks to.

    with FakeGeminiServer() as srv:
        srv.generate.script("Hello!", GeminiReply(calls=[GeminiCall("add", {"a": 1})]))
        client = genai.Client(api_key=srv.api_key, http_options={"base_url": srv.base_url})

Endpoints: ``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse`` (one ``data:`` event per chunk). Replies carry thought parts
(when the request's ``thinkingConfig.includeThoughts`` asks for them), ``thoughtSignature`` on
parts, ``usageMetadata`` (prompt, candidates, thoughts, cached and total token counts) and a
``finishReason``; errors come as Google's ``{"error": {"code", "message", "status"}}``.

Like Gemini 3, the server answers ``400 INVALID_ARGUMENT`` when a request's history holds a
function call (or a text part) it signed without the signature it issued
(``require_signatures``). ``reject_response_schema`` / ``reject_json_mode`` make it refuse
structured output as older servers do, ``context_window`` refuses prompts longer than that many
tokens (one per word), ``require_auth`` checks the key (``x-goog-api-key`` or ``?key=``).
Every request is kept in ``requests`` (`RecordedRequest`) and its JSON in ``generate.requests``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import threading
import zlib
from typing import Any

from promptimus.errors import FakeServerError
from promptimus.testing.background import BackgroundServer
from promptimus.testing.fake_gemini_script import GeminiCall, GeminiFault, GeminiReply
from promptimus.testing.http import HttpConnection, HttpRequest, HttpServer
from promptimus.testing.script import RecordedRequest, Route

__all__ = ["FakeGeminiServer"]

_PATH = re.compile(r"^/v1beta/(models/[^:]+):(generateContent|streamGenerateContent)$")


def _error(code: int, status: str, message: str, **extra: Any) -> tuple[int, dict[str, Any]]:
    return code, {"error": {"code": code, "message": message, "status": status, **extra}}


def _words(text: str) -> int:
    return len(text.split())


class FakeGeminiServer(BackgroundServer):
    """A scripted Gemini API server. Start it with ``with`` / ``async with`` or `start`."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str = "fake-gemini-key",
        default_reply: str | None = None,
        require_auth: bool = False,
        require_signatures: bool = True,
        reject_response_schema: bool = False,
        reject_json_mode: bool = False,
        context_window: int | None = None,
        record: bool = True,
    ) -> None:
        self.host = host
        self.api_key = api_key
        self.default_reply = default_reply
        self.require_auth = require_auth
        self.require_signatures = require_signatures
        self.reject_response_schema = reject_response_schema
        self.reject_json_mode = reject_json_mode
        self.context_window = context_window
        self.record = record
        self.dripped: list[int] = []
        """Per reply sent with `GeminiFault.drip`, how many of its bytes went out."""
        self.generate = Route("generate")
        self.requests: list[RecordedRequest] = []
        self._signed_calls: dict[str, str] = {}  # call key -> the signature issued with it
        self._signed_texts: dict[str, str] = {}  # answer text -> the signature issued with it
        self._signatures = itertools.count(1)
        self._lock = threading.Lock()
        self._requested_port = port
        self._port: int | None = None
        self._http = HttpServer(self._handle)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle (start, stop, with: BackgroundServer) ---------------------------------------

    _label = "fake Gemini"

    async def _start_http(self) -> int:
        return await self._http.start(self.host, self._requested_port)

    async def _stop_http(self) -> None:
        await self._http.close()

    @property
    def port(self) -> int:
        if self._port is None:
            raise FakeServerError("The fake Gemini server is not running; start it with `with`.")
        return self._port

    @property
    def base_url(self) -> str:
        """The API root to give the SDK (``http_options={"base_url": ...}``) or ``Gemini``."""
        return f"http://{self.host}:{self.port}"

    def clear(self) -> None:
        """Forget the recorded requests, the script and the signatures issued."""
        self.requests.clear()
        self.generate.clear()
        with self._lock:
            self._signed_calls.clear()
            self._signed_texts.clear()

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "not running"
        return f"FakeGeminiServer({where})"

    # --- requests -----------------------------------------------------------------------------

    async def _handle(self, request: HttpRequest, conn: HttpConnection) -> None:
        try:
            body = json.loads(request.body) if request.body else None
        except ValueError:
            body = None
        if self.record:
            self.requests.append(
                RecordedRequest(
                    request.method, request.path, request.headers, body, request.query, request.body
                )
            )
        match = _PATH.match(request.path)
        if request.method != "POST" or match is None:
            await self._send_error(conn, *_error(404, "NOT_FOUND", f"no route {request.path}"))
            return
        refusal = self._refusal(request, body)
        if refusal is not None:
            if isinstance(body, dict) and self.record:
                self.generate._record(body)
            await self._send_error(conn, *refusal)
            return
        assert isinstance(body, dict)
        if self.record:
            self.generate._record(body)
        item = await self.generate._next_item(body)
        stream = match.group(2) == "streamGenerateContent"
        if isinstance(item, GeminiFault):
            await self._fault(item, request, body, conn, stream)
            return
        reply = self._reply(item, body)
        chunks = self._chunks(reply, body, match.group(1))
        if stream:
            await conn.start_stream()
            for chunk in chunks:
                await conn.send_chunk(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
            await conn.end_stream()
        else:
            await conn.send(200, json.dumps(_merged(chunks)).encode())

    def _refusal(self, request: HttpRequest, body: Any) -> tuple[int, dict[str, Any]] | None:
        if self.require_auth:
            sent = request.headers.get("x-goog-api-key") or _query_key(request.query)
            if not sent:
                return _error(401, "UNAUTHENTICATED", "Method doesn't allow unregistered callers.")
            if sent != self.api_key:
                return _error(403, "PERMISSION_DENIED", "The caller does not have permission.")
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
            return _error(400, "INVALID_ARGUMENT", "Invalid JSON payload: contents is required.")
        config = body.get("generationConfig") or {}
        schema = bool({"responseJsonSchema", "responseSchema"} & config.keys()) or bool(
            {"response_json_schema", "response_schema"} & config.keys()
        )
        json_mode = "responseMimeType" in config or "response_mime_type" in config
        if (self.reject_response_schema and schema) or (self.reject_json_mode and json_mode):
            field = (
                "generation_config.response_json_schema"
                if schema
                else ("generation_config.response_mime_type")
            )
            violation = {"field": field, "description": "not supported by this model"}
            detail = {
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [violation],
            }
            return _error(400, "INVALID_ARGUMENT", f"Invalid value at '{field}'", details=[detail])
        unanswered = _unpaired_function_turn(body["contents"])
        if unanswered is not None:
            return _error(400, "INVALID_ARGUMENT", unanswered)
        if self.context_window is not None:
            tokens = _prompt_tokens(body)
            if tokens > self.context_window:
                return _error(
                    400,
                    "INVALID_ARGUMENT",
                    f"The input token count ({tokens}) exceeds the maximum number of tokens "
                    f"allowed ({self.context_window}).",
                )
        return self._missing_signature(body) if self.require_signatures else None

    def _missing_signature(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        with self._lock:
            calls, texts = dict(self._signed_calls), dict(self._signed_texts)
        for content in body["contents"]:
            if not isinstance(content, dict) or content.get("role") != "model":
                continue
            for position, part in enumerate(content.get("parts") or ()):
                issued = None
                if "functionCall" in part:
                    issued = calls.get(_call_key(part["functionCall"]))
                elif isinstance(part.get("text"), str) and not part.get("thought"):
                    issued = texts.get(part["text"])
                if issued is not None and part.get("thoughtSignature") != issued:
                    what = "functionCall" if "functionCall" in part else "text"
                    return _error(
                        400,
                        "INVALID_ARGUMENT",
                        f"{what} part is missing a thought_signature in its position "
                        f"{position}: the thought signature the model returned must be sent "
                        "back on the same part.",
                    )
        return None

    async def _send_error(self, conn: HttpConnection, code: int, body: dict[str, Any]) -> None:
        await conn.send(code, json.dumps(body).encode())

    async def _fault(
        self,
        fault: GeminiFault,
        request: HttpRequest,
        body: dict[str, Any],
        conn: HttpConnection,
        stream: bool,
    ) -> None:
        if fault.kind == "drop":
            conn.drop()
            return
        if fault.kind == "raw":
            if stream and fault.status_code == 200:
                await conn.start_stream()
                await conn.send_chunk(fault.body)
                await conn.end_stream()
            else:
                await conn.send(fault.status_code, fault.body)
            return
        if fault.kind == "status" or (fault.kind == "stream_error" and not stream):
            payload = json.loads(json.dumps(fault.body))
            if fault.quotes_key:
                sent = request.headers.get("x-goog-api-key") or _query_key(request.query)
                payload["error"]["message"] = f"API key not valid: {sent}"
            await conn.send(fault.status_code, json.dumps(payload).encode(), headers=fault.headers)
            return
        chunks = self._chunks(self._reply(None, body), body, "models/fake")
        if fault.kind == "drip":
            await self._drip(conn, chunks, stream, fault.seconds)
            return
        if fault.kind == "long_line":
            await self._long_line(conn, fault.after_chunks)
            return
        if fault.kind == "malformed" and not stream:
            await conn.send(200, b"<html>502 Bad Gateway</html>", content_type="text/html")
            return
        if not stream:
            data = json.dumps(_merged(chunks)).encode()
            await conn.send_partial(200, data, len(data) // 2)
            return
        await conn.start_stream()
        for chunk in chunks[: fault.after_chunks]:
            await conn.send_chunk(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
        if fault.kind == "malformed":
            await conn.send_chunk(b"data: {not json\r\n\r\n")
            await conn.end_stream()
        elif fault.kind == "stream_error":
            await conn.send_chunk(f"data: {json.dumps(fault.body)}\r\n\r\n".encode())
            await conn.end_stream()
        elif fault.clean:
            await conn.end_stream()
        else:
            conn.drop()

    async def _drip(
        self, conn: HttpConnection, chunks: list[dict[str, Any]], stream: bool, every: float
    ) -> None:
        self.dripped.append(0)
        index = len(self.dripped) - 1

        def sent() -> None:
            self.dripped[index] += 1

        if stream:
            conn.closing = True
            await conn.start_stream()
            events = b"".join(f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks)
            await conn.drip(events, every, sent, chunked=True)
        else:
            await conn.send_slowly(200, json.dumps(_merged(chunks)).encode(), every, sent)
        conn.close()

    async def _long_line(self, conn: HttpConnection, size: int) -> None:
        """One gzip-compressed line of ``size`` bytes, compressed and sent a piece at a time."""
        conn.closing = True
        await conn.start_stream(headers={"content-encoding": "gzip"})
        packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # the gzip format
        piece = b"a" * (1024 * 1024)
        with contextlib.suppress(ConnectionError):
            await conn.send_chunk(packer.compress(b'data: {"text": "'))
            for start in range(0, size, len(piece)):
                await conn.send_chunk(packer.compress(piece[: size - start]))
            await conn.send_chunk(packer.flush())
            await conn.end_stream()
        conn.close()

    # --- replies ------------------------------------------------------------------------------

    def _reply(self, item: Any, body: dict[str, Any]) -> GeminiReply:
        if isinstance(item, GeminiReply):
            return item
        if isinstance(item, str):
            return GeminiReply(text=item)
        if item is not None:
            raise FakeServerError(f"cannot answer with {item!r}: script GeminiReply or a str")
        return GeminiReply(text=self.default_reply or f"echo: {_last_user_text(body)}")

    def _sign(self, given: str | bool | None) -> str | None:
        if given is True:
            # opaque to the client, base64 like the real ones (the SDK decodes them to bytes)
            return base64.b64encode(f"sig-{next(self._signatures)}".encode()).decode()
        return given or None

    def _chunks(self, reply: GeminiReply, body: dict[str, Any], model: str) -> list[dict[str, Any]]:
        """The reply as stream events (a plain answer is their merge): thought, text pieces,
        the calls, then the finish reason with the usage."""
        wants = (body.get("generationConfig") or {}).get("thinkingConfig", {})
        parts_by_chunk: list[list[dict[str, Any]]] = []
        # proto JSON takes either spelling of a field name (the SDK sends nested ones as given)
        asked = wants.get("includeThoughts", wants.get("include_thoughts"))
        if reply.thought and (reply.always_thoughts or asked):
            thought: dict[str, Any] = {"text": reply.thought, "thought": True}
            if reply.thought_signature:
                thought["thoughtSignature"] = reply.thought_signature
            parts_by_chunk.append([thought])
        if reply.text:
            pieces = _split(reply.text, max(1, reply.chunks))
            parts_by_chunk.extend([{"text": piece}] for piece in pieces)
            if reply.signature:
                parts_by_chunk[-1][0]["thoughtSignature"] = reply.signature
            if reply.signature and self.require_signatures:
                with self._lock:
                    self._signed_texts[reply.text] = reply.signature
        calls = [self._call_part(call) for call in reply.calls or ()]
        if calls:
            parts_by_chunk.append(calls)
        events: list[dict[str, Any]] = [
            {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}
            for parts in parts_by_chunk
        ] or [{"candidates": [{"content": {"role": "model", "parts": []}, "index": 0}]}]
        events[-1]["candidates"][0]["finishReason"] = reply.finish_reason
        events[-1]["usageMetadata"] = self._usage(reply, body)
        for event in events:
            event["modelVersion"] = reply.model or model.removeprefix("models/")
            event["responseId"] = "fake-response"
        return events

    def _call_part(self, call: GeminiCall) -> dict[str, Any]:
        function: dict[str, Any] = {"name": call.name, "args": call.args}
        if call.id is not None:
            function["id"] = call.id
        part: dict[str, Any] = {"functionCall": function}
        signature = self._sign(call.signature)
        if signature is not None:
            part["thoughtSignature"] = signature
            if self.require_signatures:
                with self._lock:
                    self._signed_calls[_call_key(function)] = signature
        return part

    def _usage(self, reply: GeminiReply, body: dict[str, Any]) -> dict[str, int]:
        prompt = _prompt_tokens(body)
        candidates = _words(reply.text or "") + 3 * len(reply.calls or ())
        thoughts = _words(reply.thought or "")
        usage = {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "thoughtsTokenCount": thoughts,
            "totalTokenCount": prompt + candidates + thoughts,
        }
        usage.update(reply.usage or {})
        return usage


def _query_key(query: str) -> str | None:
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        if name == "key":
            return value
    return None


def _call_key(function: dict[str, Any]) -> str:
    if function.get("id"):
        return f"id:{function['id']}"
    return f"{function.get('name')}:{json.dumps(function.get('args') or {}, sort_keys=True)}"


def _prompt_tokens(body: dict[str, Any]) -> int:
    texts = [
        part.get("text") or json.dumps(part.get("functionResponse") or "")
        for content in [body.get("systemInstruction") or {}, *body.get("contents", [])]
        if isinstance(content, dict)
        for part in content.get("parts") or ()
        if isinstance(part, dict)
    ]
    return sum(_words(text) for text in texts)


def _last_user_text(body: dict[str, Any]) -> str:
    for content in reversed(body.get("contents") or []):
        if isinstance(content, dict) and content.get("role", "user") == "user":
            texts = [p.get("text") for p in content.get("parts") or () if isinstance(p, dict)]
            found = " ".join(t for t in texts if isinstance(t, str))
            if found:
                return found
    return ""


def _split(text: str, count: int) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _merged(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The plain answer the stream's events make: their parts, consecutive texts joined."""
    parts: list[dict[str, Any]] = []
    for event in events:
        for part in event["candidates"][0]["content"]["parts"]:
            last = parts[-1] if parts else None
            joinable = (
                last is not None
                and "text" in part
                and "text" in last
                and bool(last.get("thought")) == bool(part.get("thought"))
                and "thoughtSignature" not in last
            )
            if joinable and last is not None:
                last["text"] += part["text"]
                if "thoughtSignature" in part:
                    last["thoughtSignature"] = part["thoughtSignature"]
            else:
                parts.append(dict(part))
    final = events[-1]
    merged = {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": final["candidates"][0].get("finishReason"),
                "index": 0,
            }
        ],
        "usageMetadata": final.get("usageMetadata"),
        "modelVersion": final.get("modelVersion"),
        "responseId": final.get("responseId"),
    }
    return merged


def _unpaired_function_turn(contents: list[Any]) -> str | None:
    """What the API says when a function response does not come right after the function
    call turn it answers, or answers a different number of calls; None when all pair up."""
    previous_calls = 0
    for content in contents:
        parts = content.get("parts") if isinstance(content, dict) else None
        parts = [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
        responses = sum("functionResponse" in part for part in parts)
        if responses and not previous_calls:
            return (
                "Please ensure that function response turn comes immediately after a function "
                "call turn."
            )
        if previous_calls and responses != previous_calls:
            return (
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn."
            )
        previous_calls = sum("functionCall" in part for part in parts)
    return None
