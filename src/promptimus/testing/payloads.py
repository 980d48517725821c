"""JSON bodies of the fake OpenAI API: chat completions and chunks, embeddings, rerank, errors."""

from __future__ import annotations

import base64
import json
import math
import re
import struct
from collections.abc import Callable, Iterator
from typing import Any

from promptimus.embedders.hashing import hashed_embedding, tokenize
from promptimus.testing.context_overflow import context_overflow_body
from promptimus.testing.rejections import rejection_body, response_format_rejection_body
from promptimus.testing.script import Reply, ToolCall

__all__ = [
    "BadRequest",
    "chat_chunks",
    "chat_completion",
    "context_overflow_body",
    "echo_text",
    "embeddings_response",
    "error_body",
    "prompt_tokens",
    "rejection_body",
    "rerank_response",
    "response_format_rejection_body",
]

CREATED = 1_700_000_000
"""A fixed ``created`` timestamp keeps responses byte-for-byte deterministic."""

DEFAULT_EMBEDDING_DIMENSIONS = 64

_ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "forbidden"),
    404: ("invalid_request_error", "not_found"),
    405: ("invalid_request_error", "method_not_allowed"),
    408: ("timeout_error", "timeout"),
    409: ("conflict_error", "conflict"),
    422: ("invalid_request_error", "unprocessable_entity"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}
_PIECE = re.compile(r"\s*\S+\s*")


class BadRequest(Exception):
    """A request the fake server answers with 400 and this message."""


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind, code = _ERROR_TYPES.get(status, ("server_error", "server_error"))
    if message is None:
        message = f"fake server: injected error {status}"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def message_text(content: Any) -> str:
    """The text of a message's ``content``: a string or a list of parts (text parts joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict)
        ).strip()
    return str(content)


def echo_text(body: dict[str, Any]) -> str:
    """``"echo: <last user message>"``: the default reply."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return "echo: " + message_text(message.get("content"))
    return "echo: "


def _words(text: str | None) -> int:
    return len(text.split()) if text else 0


def prompt_tokens(body: dict[str, Any]) -> int:
    """The fake tokenizer's count of a chat request's prompt: one token per word."""
    return sum(
        _words(message_text(m.get("content")))
        for m in body.get("messages") or []
        if isinstance(m, dict)
    )


def _arguments(call: ToolCall) -> str:
    args = call.arguments
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _usage(reply: Reply, body: dict[str, Any], arguments: list[str]) -> dict[str, Any]:
    given = reply.usage
    if isinstance(given, dict):
        get: Callable[[str], Any] = given.get
    elif given is not None:

        def get(name: str) -> Any:
            return getattr(given, name, None)

    else:

        def get(name: str) -> Any:
            return None

    prompt = get("prompt_tokens")
    if prompt is None:
        prompt = prompt_tokens(body)
    reasoning = get("reasoning_tokens")
    if reasoning is None:
        reasoning = _words(reply.reasoning)
    completion = get("completion_tokens")
    if completion is None:
        completion = _words(reply.content) + reasoning + sum(_words(a) for a in arguments)
    total = get("total_tokens")
    if total is None:
        total = prompt + completion
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
        "prompt_tokens_details": {"cached_tokens": get("cached_tokens") or 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def _finish_reason(reply: Reply) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def _call_ids(reply: Reply, next_call_id: Callable[[], str]) -> list[str]:
    return [call.id or next_call_id() for call in reply.tool_calls or ()]


def _with_extra(entry: dict[str, Any], call: ToolCall) -> dict[str, Any]:
    """A tool call entry with the call's ``extra_content`` (a thought signature), if scripted."""
    if call.extra_content is not None:
        entry["extra_content"] = call.extra_content
    return entry


def chat_completion(
    reply: Reply,
    body: dict[str, Any],
    completion_id: str,
    next_call_id: Callable[[], str],
) -> dict[str, Any]:
    """A complete ``chat.completion`` object for ``reply``."""
    arguments = [_arguments(call) for call in reply.tool_calls or ()]
    message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = [
            _with_extra(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": args},
                },
                call,
            )
            for call, call_id, args in zip(
                reply.tool_calls, _call_ids(reply, next_call_id), arguments, strict=True
            )
        ]
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": CREATED,
        "model": reply.model or body.get("model") or "fake-model",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _finish_reason(reply),
                "logprobs": None,
            }
        ],
        "usage": _usage(reply, body, arguments),
        "system_fingerprint": "fp_fake",
    }


def split_text(text: str) -> list[str]:
    """Word-sized pieces that join back to exactly ``text``."""
    pieces = _PIECE.findall(text)
    if "".join(pieces) != text:  # only whitespace, or empty
        return [text] if text else []
    return pieces


def _split_arguments(args: str) -> list[str]:
    if len(args) < 3:
        return [args]
    step = math.ceil(len(args) / 3)
    return [args[i : i + step] for i in range(0, len(args), step)]


def chat_chunks(
    reply: Reply,
    body: dict[str, Any],
    completion_id: str,
    next_call_id: Callable[[], str],
) -> Iterator[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects streaming ``reply``, usage chunk included if asked."""
    model = reply.model or body.get("model") or "fake-model"
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and bool(options.get("include_usage"))

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [
                {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
            ],
        }
        if include_usage:
            data["usage"] = None
        return data

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in split_text(reply.reasoning or ""):
        yield chunk({"reasoning_content": piece})
    for piece in split_text(reply.content or ""):
        yield chunk({"content": piece})
    arguments = [_arguments(call) for call in reply.tool_calls or ()]
    ids = _call_ids(reply, next_call_id)
    for index, call in enumerate(reply.tool_calls or ()):
        fragments = _split_arguments(arguments[index])
        first = {
            "index": index,
            "id": ids[index],
            "type": "function",
            "function": {"name": call.name, "arguments": fragments[0]},
        }
        yield chunk({"tool_calls": [_with_extra(first, call)]})
        for fragment in fragments[1:]:
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})
    yield chunk({}, _finish_reason(reply))
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = _usage(reply, body, arguments)
        yield last


def coerce_reply(item: Any) -> Reply:
    if isinstance(item, Reply):
        return item
    if isinstance(item, str):
        return Reply(content=item)
    if isinstance(item, ToolCall):
        return Reply(tool_calls=[item])
    raise TypeError(
        f"cannot send {type(item).__name__} as a chat reply; script a str, Reply, ToolCall, "
        "Fault or a full response dict"
    )


# --- embeddings -------------------------------------------------------------------------------


def _inputs(body: dict[str, Any]) -> list[str]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list) and raw:
        if all(isinstance(x, int) for x in raw):  # one text as token ids
            return [" ".join(map(str, raw))]
        texts: list[str] = []
        for x in raw:
            if isinstance(x, str):
                texts.append(x)
            elif isinstance(x, list) and all(isinstance(t, int) for t in x):
                texts.append(" ".join(map(str, x)))
            else:
                raise BadRequest("'input' items must be strings or lists of token ids")
        return texts
    raise BadRequest("'input' must be a non-empty string or list")


def _encode(vector: list[float], encoding_format: Any) -> Any:
    if encoding_format == "base64":
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
    return vector


def embeddings_response(
    body: dict[str, Any], vectors: list[list[float]] | None = None
) -> dict[str, Any]:
    """An embeddings list: given ``vectors``, or hashed embeddings of the inputs."""
    texts = _inputs(body)
    dims = body.get("dimensions")
    if dims is None:
        dims = DEFAULT_EMBEDDING_DIMENSIONS
    if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
        raise BadRequest("'dimensions' must be a positive integer")
    if vectors is None:
        vectors = [hashed_embedding(text, dims) for text in texts]
    fmt = body.get("encoding_format")
    tokens = sum(_words(text) for text in texts)
    return {
        "object": "list",
        "data": [
            {"object": "embedding", "index": i, "embedding": _encode(list(v), fmt)}
            for i, v in enumerate(vectors)
        ],
        "model": body.get("model") or "fake-embedding",
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


# --- rerank -----------------------------------------------------------------------------------


def _document_text(document: Any) -> str:
    if isinstance(document, str):
        return document
    text = document.get("text") if isinstance(document, dict) else None
    if isinstance(text, str):
        return text
    raise BadRequest('each document must be a string or {"text": string}')


def lexical_score(query: str, document: str) -> float:
    """Cosine of the word sets: shared words / sqrt(|query words| * |document words|)."""
    q, d = set(tokenize(query)), set(tokenize(document))
    if not q or not d:
        return 0.0
    return len(q & d) / math.sqrt(len(q) * len(d))


def rerank_response(body: dict[str, Any], scores: list[float] | None = None) -> dict[str, Any]:
    """Cohere/Jina-style results, best first (ties keep input order), cut to ``top_n``."""
    query = body.get("query")
    documents = body.get("documents")
    if not isinstance(query, str) or not isinstance(documents, list):
        raise BadRequest("rerank needs 'query' (string) and 'documents' (list)")
    texts = [_document_text(doc) for doc in documents]
    if scores is None:
        scores = [lexical_score(query, text) for text in texts]
    elif len(scores) != len(texts):
        raise BadRequest(f"scripted {len(scores)} scores for {len(texts)} documents")
    order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
    top_n = body.get("top_n")
    if isinstance(top_n, int) and top_n >= 0:
        order = order[:top_n]
    with_documents = body.get("return_documents", True) is not False
    results: list[dict[str, Any]] = []
    for i in order:
        result: dict[str, Any] = {"index": i, "relevance_score": float(scores[i])}
        if with_documents:
            result["document"] = {"text": texts[i]}
        results.append(result)
    tokens = _words(query) + sum(_words(text) for text in texts)
    return {
        "model": body.get("model") or "fake-rerank",
        "results": results,
        "usage": {"total_tokens": tokens},
    }
