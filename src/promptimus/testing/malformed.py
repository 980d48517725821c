"""The malformed 200 replies the fake server can send (`Fault.malformed(kind)`), per route.

Each kind imitates something real servers, proxies and gateways answer with a ``200 OK``: an HTML
error page, a JSON list, an object without the fields the API promises, a field of the wrong type,
or a well-formed reply that says nothing at all. ``MALFORMED_KINDS`` maps every kind to the routes
("chat", "embeddings", "rerank") it applies to.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

__all__ = [
    "MALFORMED_KINDS",
    "ROUTES",
    "MalformedBody",
    "malformed_body",
    "malformed_stream",
    "not_applicable",
]

ROUTES = ("chat", "embeddings", "rerank")
_ALL = ROUTES

MALFORMED_KINDS: dict[str, tuple[str, ...]] = {
    # the body is not a JSON object
    "invalid_json": _ALL,  # a JSON object cut in the middle (in a stream: one such event)
    "empty_body": _ALL,  # no body at all (a stream: no event at all, like Fault.cut(0))
    "html": _ALL,  # an HTML error page (text/html), as a proxy or a login portal sends
    "text": _ALL,  # a plain-text error (text/plain), as a load balancer sends
    "json_list": _ALL,  # a JSON array (in a stream: one event whose data is an array)
    "empty_object": _ALL,  # {} (in a stream: one {} event)
    # chat: fields missing, null or of the wrong type
    "null_choices": ("chat",),  # "choices": null
    "no_choices": ("chat",),  # "choices": [] (a stream: every chunk without a choice)
    "choices_not_list": ("chat",),  # "choices": "abc"
    "null_message": ("chat",),  # choices[0].message null (a stream: choices[0] null)
    "wrong_types": _ALL,  # chat: content 123; embeddings: ["a", "b"]; rerank: score "high"
    "bad_tool_calls": ("chat",),  # tool_calls is a string
    "bad_usage": ("chat",),  # usage.prompt_tokens is "many"
    # chat: well formed, but empty
    "empty_answer": ("chat",),  # no content, no tool call, no refusal; finish_reason "stop"
    "empty_length": ("chat",),  # the same with finish_reason "length" (max_tokens spent)
    # embeddings
    "null_data": ("embeddings",),  # "data": null
    "no_data": ("embeddings",),  # "data": []
    "short_data": ("embeddings",),  # one vector fewer than the inputs
    "null_embedding": ("embeddings",),  # data[0].embedding null
    "empty_embedding": ("embeddings",),  # data[0].embedding []
    "ragged": ("embeddings",),  # the first vector one component shorter than the others
    "nan": ("embeddings",),  # a NaN component (Python's JSON extension, which httpx reads)
    # rerank
    "null_results": ("rerank",),  # "results": null
    "no_results": ("rerank",),  # "results": [] for a non-empty list of documents
    "bad_index": ("rerank",),  # an index outside the documents
}
"""Every kind `Fault.malformed` accepts, with the routes it applies to."""

_HTML = (
    b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title></head>\n"
    b"<body><h1>502 Bad Gateway</h1><p>The upstream server did not answer.</p></body></html>\n"
)
_TEXT = b"upstream connect error or disconnect/reset before headers. reset reason: overflow\n"
_BROKEN = b'{"id": "broken", "object": "chat.completion", "choices": ['


class MalformedBody:
    """A complete response to send: status 200, ``content_type`` and ``body`` bytes."""

    __slots__ = ("body", "content_type")

    def __init__(self, body: bytes, content_type: str = "application/json") -> None:
        self.body = body
        self.content_type = content_type


def _json(data: Any) -> MalformedBody:
    return MalformedBody(json.dumps(data).encode())


def _generic(kind: str) -> MalformedBody | None:
    if kind == "invalid_json":
        return MalformedBody(_BROKEN)
    if kind == "empty_body":
        return MalformedBody(b"")
    if kind == "html":
        return MalformedBody(_HTML, "text/html; charset=utf-8")
    if kind == "text":
        return MalformedBody(_TEXT, "text/plain; charset=utf-8")
    if kind == "json_list":
        return _json(["not", "an", "object"])
    if kind == "empty_object":
        return _json({})
    return None


def _chat(kind: str, good: dict[str, Any]) -> dict[str, Any]:
    choice = good["choices"][0]
    message = choice["message"]
    if kind == "null_choices":
        good["choices"] = None
    elif kind == "no_choices":
        good["choices"] = []
    elif kind == "choices_not_list":
        good["choices"] = "abc"
    elif kind == "null_message":
        choice["message"] = None
    elif kind == "wrong_types":
        message["content"] = 123
    elif kind == "bad_tool_calls":
        message["tool_calls"] = "add(1, 2)"
    elif kind == "bad_usage":
        good["usage"]["prompt_tokens"] = "many"
    elif kind in ("empty_answer", "empty_length"):
        message["content"] = None
        message.pop("tool_calls", None)
        choice["finish_reason"] = "length" if kind == "empty_length" else "stop"
    return good


def _floats(raw: Any) -> Any:
    if isinstance(raw, str):  # base64 float32, as asked: spoil the numbers themselves
        return list(struct.unpack(f"<{len(base64.b64decode(raw)) // 4}f", base64.b64decode(raw)))
    return raw


def _embeddings(kind: str, good: dict[str, Any]) -> dict[str, Any]:
    data = good["data"]
    for item in data:
        item["embedding"] = _floats(item["embedding"])
    if kind == "null_data":
        good["data"] = None
    elif kind == "no_data":
        good["data"] = []
    elif kind == "short_data":
        good["data"] = data[:-1]
    elif kind == "null_embedding":
        data[0]["embedding"] = None
    elif kind == "empty_embedding":
        data[0]["embedding"] = []
    elif kind == "ragged":
        if len(data) > 1:
            data[0]["embedding"] = data[0]["embedding"][:-1]
        else:  # one vector cannot disagree with itself: make it ragged inside
            data[0]["embedding"] = [data[0]["embedding"][:2], 0.5]
    elif kind == "nan":
        data[0]["embedding"][0] = float("nan")
    elif kind == "wrong_types":
        data[0]["embedding"] = ["a", "b"]
    return good


def _rerank(kind: str, good: dict[str, Any]) -> dict[str, Any]:
    if kind == "null_results":
        good["results"] = None
    elif kind == "no_results":
        good["results"] = []
    elif kind == "bad_index":
        good["results"][0]["index"] = 10_000
    elif kind == "wrong_types":
        good["results"][0]["relevance_score"] = "high"
    return good


def malformed_body(kind: str, route: str, good: dict[str, Any]) -> MalformedBody:
    """The body of a plain (non-stream) reply of ``kind``; ``good`` is the reply it spoils."""
    generic = _generic(kind)
    if generic is not None:
        return generic
    spoil = {"chat": _chat, "embeddings": _embeddings, "rerank": _rerank}[route]
    return _json(spoil(kind, good))


def malformed_stream(
    kind: str, chunks: list[dict[str, Any]], position: int
) -> tuple[MalformedBody | None, list[bytes]]:
    """How a stream of ``kind`` goes: either a whole non-stream body to send instead of the
    stream (html, text) or the SSE events to send, ``[DONE]`` included when the stream ends
    normally. ``position`` is the chunk a one-chunk kind replaces."""
    if kind in ("html", "text"):
        return _generic(kind), []
    if kind == "empty_body":
        return None, []

    def event(data: Any) -> bytes:
        raw = data if isinstance(data, bytes) else json.dumps(data).encode()
        return b"data: " + raw + b"\n\n"

    if kind in ("empty_answer", "empty_length"):
        first, finish = chunks[0], json.loads(json.dumps(chunks[0]))
        finish["choices"][0]["delta"] = {}
        finish["choices"][0]["finish_reason"] = "length" if kind == "empty_length" else "stop"
        return None, [event(first), event(finish), b"data: [DONE]\n\n"]
    if kind == "no_choices":
        emptied = [dict(chunk, choices=[]) for chunk in chunks if chunk.get("choices")]
        return None, [*map(event, emptied), b"data: [DONE]\n\n"]
    position = min(position, len(chunks) - 1)
    spoilt = json.loads(json.dumps(chunks[position]))
    choice = spoilt["choices"][0] if spoilt.get("choices") else {"delta": {}}
    bad: Any
    if kind == "invalid_json":
        bad = b'{"id": "broken", "choices": ['
    elif kind == "json_list":
        bad = ["not", "a", "chunk"]
    elif kind == "empty_object":
        bad = {}
    elif kind == "null_choices":
        spoilt["choices"] = None
        spoilt.pop("usage", None)
        bad = spoilt
    elif kind == "choices_not_list":
        spoilt["choices"] = "abc"
        bad = spoilt
    elif kind == "null_message":
        spoilt["choices"] = [None]
        bad = spoilt
    elif kind == "wrong_types":
        choice["delta"] = {"content": 123}
        spoilt["choices"] = [choice]
        bad = spoilt
    elif kind == "bad_tool_calls":
        choice["delta"] = {"tool_calls": "add(1, 2)"}
        spoilt["choices"] = [choice]
        bad = spoilt
    elif kind == "bad_usage":
        spoilt["usage"] = {"prompt_tokens": "many", "completion_tokens": 1, "total_tokens": 1}
        bad = spoilt
    else:  # pragma: no cover - Fault.malformed checks the kind
        raise ValueError(f"no stream form for malformed kind {kind!r}")
    events = [event(chunk) for chunk in chunks]
    events[position] = event(bad)
    return None, [*events, b"data: [DONE]\n\n"]


def not_applicable(kind: str, route: str) -> str:
    routes = ", ".join(MALFORMED_KINDS[kind])
    return f"Fault.malformed({kind!r}) applies to {routes}, not to the {route} route"
