"""Read what an OpenAI-compatible server said in an error body, whatever its dialect.

Servers disagree on the shape: OpenAI and llama.cpp send ``{"error": {"message", "type", "code",
...}}``, vLLM a flat ``{"object": "error", "message", "type": "BadRequestError", "code": 400}``,
FastAPI-based servers (llama-cpp-python) ``{"detail": [{"loc", "msg", "type"}]}`` for a request
that fails validation, and some send plain text. Two questions matter for retrying: is this a
rejection of the request itself (the same request would fail again), and is it the context window
(the prompt is too long for the model)?
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = ["ContextOverflow", "context_overflow", "error_fields", "is_request_error_body"]

_REQUEST_ERROR_KINDS = frozenset(
    {
        "invalid_request_error",  # OpenAI, llama.cpp
        "invalid_request",
        "badrequesterror",  # vLLM
        "bad_request",
        "bad_request_error",
        "validation_error",
        "request_validation_error",
        "exceed_context_size_error",  # llama.cpp
        "context_length_exceeded",  # OpenAI
        "not_supported_error",  # llama.cpp
        "unsupported_response_format",
    }
)
_OVERFLOW_KINDS = frozenset(
    {"context_length_exceeded", "exceed_context_size_error", "context_window_exceeded"}
)
_CONTEXT = re.compile(r"context[ _-]?(?:length|size|window)", re.IGNORECASE)
_TOO_BIG = re.compile(r"exceed|maximum|too long|too large|larger than|too many", re.IGNORECASE)
_WINDOW_NUMBERS = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),  # OpenAI, vLLM
    re.compile(r"available context size \((\d+)", re.IGNORECASE),  # llama.cpp
    re.compile(r"context (?:length|size|window) (?:of |is )?\(?(\d+)", re.IGNORECASE),
)
_PROMPT_NUMBERS = (
    re.compile(r"(?:requested|resulted in) (\d+) tokens", re.IGNORECASE),  # OpenAI, vLLM
    re.compile(r"request \((\d+) tokens\)", re.IGNORECASE),  # llama.cpp
)


def error_fields(body: Any) -> dict[str, Any]:
    """The object that describes the error (``body["error"]`` when nested), or ``{}``."""
    if not isinstance(body, dict):
        return {}
    inner = body.get("error", body)
    return inner if isinstance(inner, dict) else body


def _kinds(fields: dict[str, Any]) -> set[str]:
    values = (fields.get("type"), fields.get("code"))
    return {value.lower() for value in values if isinstance(value, str)}


def is_request_error_body(body: Any) -> bool:
    """Whether the body says the request itself is invalid (so sending it again cannot help)."""
    if isinstance(body, dict) and isinstance(body.get("detail"), list):
        details = body["detail"]
        if details and all(isinstance(d, dict) and "loc" in d and "msg" in d for d in details):
            return True  # FastAPI / pydantic request validation
    fields = error_fields(body)
    if _kinds(fields) & _REQUEST_ERROR_KINDS:
        return True
    code = fields.get("code")
    return isinstance(code, int) and 400 <= code < 500 and code not in (408, 409, 429)


@dataclass(frozen=True, slots=True)
class ContextOverflow:
    """A context-window error: the numbers the server reported, when it reported them."""

    context_window: int | None = None
    prompt_tokens: int | None = None


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return None


def context_overflow(body: Any, message: str) -> ContextOverflow | None:
    """The context-window error described by ``body`` / ``message``, or None if it is another
    error. Recognizes OpenAI (``code: context_length_exceeded``), llama.cpp
    (``type: exceed_context_size_error`` with ``n_ctx`` / ``n_prompt_tokens``), vLLM ("This
    model's maximum context length is N tokens. However, you requested M tokens") and the
    wording other servers use ("context length/size/window" with "exceeds"/"too long")."""
    fields = error_fields(body)
    text = message or ""
    if isinstance(fields.get("message"), str):
        text = f"{fields['message']} {text}"
    elif isinstance(body, str):
        text = f"{body} {text}"
    if not (_kinds(fields) & _OVERFLOW_KINDS or (_CONTEXT.search(text) and _TOO_BIG.search(text))):
        return None
    return ContextOverflow(
        context_window=_number(fields.get("n_ctx")) or _first(_WINDOW_NUMBERS, text),
        prompt_tokens=_number(fields.get("n_prompt_tokens")) or _first(_PROMPT_NUMBERS, text),
    )
