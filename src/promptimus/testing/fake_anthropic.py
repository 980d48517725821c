"""A fake Anthropic Messages API on 127.0.0.1 that the real ``anthropic`` SDK talks to.

    with FakeAnthropicServer() as srv:
        srv.messages.script(
            AnthropicReply(thinking="Add them.", tool_calls=[ToolCall("add", {"a": 1})]),
            Fault.status(529),
            "The sum is 3.",
        )
        client = anthropic.Anthropic(base_url=srv.base_url, api_key=srv.api_key)

``POST /v1/messages`` answers JSON or, with ``"stream": true``, server-sent events
(``message_start``, ``content_block_start`` / ``content_block_delta`` / ``content_block_stop``
for each block — ``text_delta``, ``thinking_delta`` then ``signature_delta``,
``input_json_delta`` — then ``message_delta`` with the stop reason and usage, and
``message_stop``). With nothing scripted it answers ``"echo: <last user text>"``.

It checks what the real API checks and a client can get wrong: ``max_tokens`` is required;
roles are ``user`` and ``assistant`` (the system prompt is the top-level ``system``); every
``tool_result`` answers a ``tool_use`` of the turn before; with thinking on, an assistant turn
that used a tool must start with its thinking block, whose ``signature`` must be one this server
issued (sent back unchanged); at most 4 ``cache_control`` breakpoints. A refused request gets a
400 ``invalid_request_error``. Cache usage is computed from the breakpoints: the prefix up to a
breakpoint seen before is read from the cache (``cache_read_input_tokens``), a new one written
(``cache_creation_input_tokens``), at one token per word.

Faults are the OpenAI fake's `Fault`, in Anthropic's terms: ``Fault.status(429,
retry_after=2)`` and ``Fault.status(529)`` send Anthropic error bodies (``rate_limit_error``,
``overloaded_error``), ``Fault.cut(after_chunks=N, clean=...)`` / ``Fault.drop`` break a stream
after N events, ``Fault.stream_error(body)`` sends an ``error`` event. Server-wide:
``context_window=N`` answers a larger request with Anthropic's "prompt is too long" 400, and
``reject_output_format=True`` refuses structured outputs (``output_config.format``) with a 400,
as a server without them does. ``batches`` serves the Message Batches API (see
`promptimus.testing.fake_anthropic_batches`). Every request is recorded (``requests`` with headers,
``messages.requests`` with bodies).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import itertools
import json
from typing import Any

from promptimus.testing.anthropic_context_edits import ContextEditError, apply_context_edits
from promptimus.testing.background import SpawnedServer, serve_from_command_line, spawn_server
from promptimus.testing.captured_answer import capture
from promptimus.testing.fake_anthropic_batches import AnthropicBatches
from promptimus.testing.fake_anthropic_script import (
    anthropic_error,
    build_blocks,
    coerce_anthropic_reply,
    echo_text,
    message_body,
    stream_events,
)
from promptimus.testing.fake_openai import FakeOpenAIServer
from promptimus.testing.http import HttpConnection, HttpRequest
from promptimus.testing.script import Fault, Route

__all__ = ["FakeAnthropicServer", "main"]

_DUMMY_KEY = "sk-ant-fake"
_MAX_BREAKPOINTS = 4
_DEFAULT_STREAM_ERROR = {"message": "fake server: error while generating", "type": "server_error"}


class _Rejected(Exception):
    pass


class FakeAnthropicServer(FakeOpenAIServer):
    """A scripted Anthropic Messages API. Start it with ``with`` / ``async with`` or `start`.

    ``messages`` is the route to script (``chat`` is the same route). ``require_auth``
    answers 401 ``authentication_error`` unless ``x-api-key: <api_key>`` is sent.
    ``base_url`` is the API root (the SDK adds ``/v1/messages``). ``ping_every`` (seconds)
    makes a stalled stream (`Fault.stall`) send a ``ping`` event that often, as the API does on
    a quiet connection, ``max_pings`` at most before it drops the connection; ``pings`` counts
    those sent. `Fault.drip` sends a reply (or a whole stream) one byte at a time."""

    _label = "fake Anthropic"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str = _DUMMY_KEY,
        default_reply: str | None = None,
        latency: float = 0.0,
        require_auth: bool = False,
        record: bool = True,
        context_window: int | None = None,
        reject_output_format: bool = False,
        ping_every: float | None = None,
        max_pings: int = 1000,
    ) -> None:
        super().__init__(
            host,
            port,
            api_key=api_key,
            models=("claude-fake",),
            default_reply=default_reply,
            latency=latency,
            record=record,
        )
        self.require_key = require_auth
        self.anthropic_context_window = context_window
        self.reject_output_format = reject_output_format
        self.messages = self.chat = Route("messages")
        self.ping_every = ping_every
        self.max_pings = max_pings
        self.pings = 0
        """Pings a stalled stream sent (see ``ping_every``)."""
        self._routes = {"/v1/messages": ("POST", self._messages)}
        batches = AnthropicBatches(self._answer_batch_line, lambda: self.base_url)
        self.batches = batches  # type: ignore[assignment]
        """The Message Batches API (``/v1/messages/batches``): see `AnthropicBatches`."""
        self._signatures: set[str] = set()
        self._cached: set[str] = set()
        self._tool_ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __repr__(self) -> str:
        where = self.base_url if self.running else "stopped"
        return f"FakeAnthropicServer({where})"

    def clear(self) -> None:
        super().clear()
        self.messages.clear()
        self._cached.clear()

    # --- subprocess mode ----------------------------------------------------------------------

    @staticmethod
    def spawn(
        reply: str | None = None, latency_ms: float = 0
    ) -> contextlib.AbstractContextManager[SpawnedServer]:
        """Run the server in a child Python process (own GIL) for the duration of the block."""
        module = "promptimus.testing.fake_anthropic"
        return spawn_server(module, "fake Anthropic", _DUMMY_KEY, reply, latency_ms)

    # --- dispatch -----------------------------------------------------------------------------

    async def _handle(self, request: HttpRequest, conn: HttpConnection) -> None:
        if self.require_key and request.headers.get("x-api-key") != self.api_key:
            if self.record:
                self.requests.append(
                    _recorded(request)  # recorded like every request
                )
            await _send(conn, 401, anthropic_error(401))
            return
        await super()._handle(request, conn)

    async def _messages(self, body: dict[str, Any], conn: HttpConnection) -> None:
        edits: list[dict[str, Any]] = []
        try:
            read, edits = apply_context_edits(body)  # what the model reads, sized below
            self._check(body, read)
        except ContextEditError as exc:
            if self.record:
                self.messages._record(body)
            await _send(conn, 400, anthropic_error("invalid_request_error", str(exc)))
            return
        except _Rejected as exc:
            if self.record:
                self.messages._record(body)
            await _send(conn, 400, anthropic_error("invalid_request_error", str(exc)))
            return
        item = await self._next(self.messages, body)
        streaming = bool(body.get("stream"))
        if isinstance(item, Fault):
            item = _in_anthropic_terms(item)
        answered, item = await self._apply_fault(item, conn, streaming)
        if answered:
            return
        fault = item if isinstance(item, Fault) else None
        if fault is not None or item is None:
            item = self.default_reply if self.default_reply is not None else echo_text(body)
        if isinstance(item, dict):
            await _send(conn, 200, item)
            return
        reply = coerce_anthropic_reply(item)
        reply.blocks = build_blocks(reply, self._sign, self._next_tool_id)
        self._signatures.update(b["signature"] for b in reply.blocks if b["type"] == "thinking")
        cache = self._cache_usage(read)  # the input the model read, after its edits
        message_id = f"msg_fake_{next(self._ids)}"
        if not streaming:
            data = message_body(reply, body, message_id, cache)
            if "context_management" in body:
                data["context_management"] = {"applied_edits": edits}
            if fault is not None and fault.kind == "drip":
                raw = json.dumps(data).encode()
                await conn.send_slowly(200, raw, fault.seconds, self._drip_counter())
                conn.close()
                return
            await _send(conn, 200, data)
            return
        events = stream_events(reply, body, message_id, cache)
        if "context_management" in body:
            delta = next(e for e in events if e["type"] == "message_delta")
            delta["context_management"] = {"applied_edits": edits}
        await self._stream_events(conn, events, fault)

    async def _answer_batch_line(self, body: dict[str, Any]) -> tuple[int, Any]:
        """One request of a batch, answered as a live Messages request would be."""
        return await capture(self._messages, body)

    async def _stream_events(
        self, conn: HttpConnection, events: list[dict[str, Any]], fault: Fault | None
    ) -> None:
        if fault is not None and fault.kind == "drip":
            conn.closing = True
            await conn.start_stream()
            raw = b"".join(_sse(event) for event in events)
            await conn.drip(raw, fault.seconds, self._drip_counter(), chunked=True)
            conn.close()
            return
        await conn.start_stream(headers={"request-id": f"req_fake_{next(self._ids)}"})
        limit = fault.after_chunks if fault is not None else None
        if fault is not None and fault.kind == "cut" and limit is None:
            limit = next(i for i, e in enumerate(events) if e["type"] == "message_delta")
        for sent, event in enumerate(events):
            if sent == limit:
                break
            await conn.send_chunk(_sse(event))
        if fault is None:
            await conn.end_stream()
        elif fault.kind == "drop" or (fault.kind == "cut" and not fault.clean):
            conn.drop()
        elif fault.kind == "cut":
            conn.closing = True
            await conn.end_stream()
        elif fault.kind == "stream_error":
            await conn.send_chunk(_sse({"type": "error", "error": fault.body}))
            conn.closing = True
            await conn.end_stream()
        elif self.ping_every is not None:  # stall, pinging
            await self._ping(conn, self.ping_every)
        else:  # stall: hang until the client gives up or the server stops
            conn.closing = True
            await conn.wait_peer_closed()

    async def _ping(self, conn: HttpConnection, every: float) -> None:
        """Send a ping every ``every`` seconds until the client has gone or ``max_pings``."""
        conn.closing = True
        with contextlib.suppress(ConnectionError):
            for _ in range(self.max_pings):
                await conn.send_chunk(_sse({"type": "ping"}))
                self.pings += 1
                await asyncio.sleep(every)
        conn.drop()

    # --- what the real API checks -------------------------------------------------------------

    def _check(self, body: dict[str, Any], read: dict[str, Any] | None = None) -> None:
        """Refuse what the API refuses; the context window holds `read` (the request as the
        model reads it, after its context edits)."""
        max_tokens = body.get("max_tokens")
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise _Rejected("max_tokens: Field required")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _Rejected("messages: at least one message is required")
        thinking = body.get("thinking")
        thinking_on = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
        previous: dict[str, Any] | None = None
        for i, message in enumerate(messages):
            self._check_message(i, message, previous, thinking_on)
            _check_answered(i - 1, previous, message)
            previous = message
        _check_answered(len(messages) - 1, previous, None)
        if _breakpoints(body) > _MAX_BREAKPOINTS:
            raise _Rejected(
                f"A maximum of {_MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {_breakpoints(body)}."
            )
        output = body.get("output_config")
        if self.reject_output_format and isinstance(output, dict) and "format" in output:
            raise _Rejected("output_config.format: Extra inputs are not permitted")
        window = self.anthropic_context_window
        if window is not None:
            total = sum(words for words, _, _ in _segments(body if read is None else read))
            if total + max_tokens > window:
                raise _Rejected(
                    f"prompt is too long: {total + max_tokens} tokens > {window} maximum"
                )

    def _check_message(
        self, i: int, message: Any, previous: dict[str, Any] | None, thinking_on: bool
    ) -> None:
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            role = message.get("role") if isinstance(message, dict) else None
            raise _Rejected(
                f"messages.{i}.role: Input should be 'user' or 'assistant' (got {role!r}); put "
                "the system prompt in the top-level system parameter"
            )
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if message["role"] == "assistant" and thinking_on and _uses_tool(blocks):
            first = blocks[0].get("type")
            if first not in ("thinking", "redacted_thinking"):
                raise _Rejected(
                    f"messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                    f"but found `{first}`. When `thinking` is enabled, a final `assistant` "
                    "message must start with a thinking block."
                )
        for j, block in enumerate(blocks):
            if block.get("type") == "thinking" and block.get("signature") not in self._signatures:
                raise _Rejected(
                    f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                )
            if block.get("type") == "tool_result":
                asked = [b.get("id") for b in _blocks(previous) if b.get("type") == "tool_use"]
                if previous is None or block.get("tool_use_id") not in asked:
                    raise _Rejected(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                        "`tool_result` blocks. Each `tool_result` block must have a "
                        "corresponding `tool_use` block in the previous message."
                    )

    # --- replies ------------------------------------------------------------------------------

    def _sign(self, text: str) -> str:
        signature = "sig_" + hashlib.sha256(f"{len(self._signatures)}:{text}".encode()).hexdigest()
        self._signatures.add(signature)
        return signature

    def _next_tool_id(self) -> str:
        return f"toolu_fake_{next(self._tool_ids)}"

    def _cache_usage(self, body: dict[str, Any]) -> dict[str, int]:
        """Input, cache-read and cache-write tokens, from the request's breakpoints: the
        longest prefix cached before (ending at any block up to the last breakpoint, as the
        API looks back from each breakpoint) is read, the rest up to the last breakpoint
        written."""
        segments = _segments(body)
        total = sum(words for words, _, _ in segments)
        digest = hashlib.sha256()
        seen = 0
        prefixes: list[tuple[str, int, bool]] = []
        for words, marked, text in segments:
            digest.update(text.encode())
            seen += words
            prefixes.append((digest.hexdigest(), seen, marked))
        last = max((i for i, (_, _, marked) in enumerate(prefixes) if marked), default=-1)
        if last < 0:
            return {"input": total, "read": 0, "write": 0}
        read = next(
            (tokens for key, tokens, _ in reversed(prefixes[: last + 1]) if key in self._cached),
            0,
        )
        written = prefixes[last][1] - read
        self._cached.update(key for key, _, marked in prefixes if marked)
        return {"input": max(total - read - written, 0), "read": read, "write": written}


def _recorded(request: HttpRequest) -> Any:
    from promptimus.testing.script import RecordedRequest

    body: Any = None
    with contextlib.suppress(ValueError):
        body = json.loads(request.body) if request.body else None
    return RecordedRequest(
        request.method, request.path, request.headers, body, request.query, request.body
    )


def _in_anthropic_terms(fault: Fault) -> Fault:
    """The fault with Anthropic's error bodies where the script gave none."""
    if fault.kind == "status" and fault.body is None:
        return dataclasses.replace(fault, body=anthropic_error(fault.status_code))
    if fault.kind == "stream_error" and fault.body == _DEFAULT_STREAM_ERROR:
        return dataclasses.replace(fault, body=anthropic_error(529)["error"])
    if fault.kind == "delay" and isinstance(fault.then, Fault):
        return dataclasses.replace(fault, then=_in_anthropic_terms(fault.then))
    return fault


def _blocks(message: dict[str, Any] | None) -> list[dict[str, Any]]:
    content = message.get("content") if message is not None else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _check_answered(
    i: int, message: dict[str, Any] | None, following: dict[str, Any] | None
) -> None:
    """Every ``tool_use`` of an assistant message is answered by a ``tool_result`` in the next
    message, as the API requires (the last message may be an assistant's prefill)."""
    if message is None or message.get("role") != "assistant":
        return
    asked = [b.get("id") for b in _blocks(message) if b.get("type") == "tool_use"]
    if not asked or following is None:
        return
    answered = {b.get("tool_use_id") for b in _blocks(following) if b.get("type") == "tool_result"}
    missing = [str(tool_id) for tool_id in asked if tool_id not in answered]
    if missing:
        raise _Rejected(
            f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
            f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
            "`tool_result` block in the next message."
        )


def _uses_tool(blocks: list[Any]) -> bool:
    return any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)


def _block_text(block: Any) -> str:
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return ""
    if block.get("type") == "text":
        return str(block.get("text", ""))
    if block.get("type") == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return " ".join(_block_text(b) for b in content)
        return str(content or "")
    if block.get("type") == "tool_use":
        return json.dumps(block.get("input"))
    return ""


def _segments(body: dict[str, Any]) -> list[tuple[int, bool, str]]:
    """The request in prompt order (tools, system, message blocks): each piece's words,
    whether it carries a ``cache_control`` breakpoint, and its text (for the cache key)."""
    out: list[tuple[int, bool, str]] = []
    for tool in body.get("tools") or ():
        text = json.dumps(tool, sort_keys=True)
        out.append((len(text.split()), "cache_control" in tool, text))
    system = body.get("system")
    for block in [system] if isinstance(system, str) else system or ():
        text = _block_text(block)
        marked = isinstance(block, dict) and "cache_control" in block
        out.append((len(text.split()), marked, text))
    for message in body.get("messages") or ():
        content = message.get("content") if isinstance(message, dict) else None
        for block in [content] if isinstance(content, str) else content or ():
            text = _block_text(block)
            marked = isinstance(block, dict) and "cache_control" in block
            out.append((len(text.split()), marked, f"{message.get('role')}:{text}"))
    return out


def _breakpoints(body: dict[str, Any]) -> int:
    return sum(marked for _, marked, _ in _segments(body))


def _sse(event: dict[str, Any]) -> bytes:
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


async def _send(conn: HttpConnection, status: int, data: Any) -> None:
    await conn.send(status, json.dumps(data).encode(), headers={"request-id": "req_fake"})


def main(argv: list[str] | None = None) -> None:
    serve_from_command_line(
        FakeAnthropicServer,
        "promptimus.testing.fake_anthropic",
        "a fake Anthropic Messages API",
        argv,
    )


if __name__ == "__main__":
    main()
