"""Read what an OpenAI-compatible server said in an error body, whatever its dialect.

Servers disagree on the shape: OpenAI and llama.cpp send ``{"error": {"message", "type", "code",
...}}``, vLLM a flat ``{"object": "error", "message", "type": "BadRequestError", "code": 400}``,
FastAPI-based servers (llama-cpp-python) ``{"detail": [{"loc", "msg", "type"}]}`` for a request
that fails validation, and some send plain text. Two questions matter for retrying: is this a
rejection of the request itself (the same request would fail again), and is it the context window
(the prompt is too long for the model)?

A request-validation report is a rejection whatever the status: FastAPI's ``detail`` list (422),
the same report as text (FastAPI's "N validation error(s):" with each error's ``'loc': ('body',
...)``) wrapped in a 500 ``internal_server_error`` by llama-cpp-python's server, pydantic's "N
validation error(s) for Model" with a field path per error. `rejected_fields` reads which fields
such a report (or OpenAI's ``param``) names, so a caller can tell a rejected ``response_format``
from a rejected message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ContextOverflow",
    "context_overflow",
    "error_fields",
    "is_request_error_body",
    "rejected_fields",
]

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
_CONTEXT = re.compile(
    r"context[ _-]?(?:length|size|window|limit)|prompt is too long", re.IGNORECASE
)
_TOO_BIG = re.compile(r"exceed|maximum|too long|too large|larger than|too many", re.IGNORECASE)
_WINDOW_NUMBERS = (
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),  # OpenAI, vLLM
    re.compile(r"available context size \((\d+)", re.IGNORECASE),  # llama.cpp
    re.compile(r"context (?:length|size|window) (?:of |is )?\(?(\d+)", re.IGNORECASE),
    re.compile(r"\d+ tokens > (\d+) maximum", re.IGNORECASE),  # Anthropic
    re.compile(r"\d+ \+ \d+ > (\d+)", re.IGNORECASE),  # Anthropic: input + max_tokens > limit
)
_PROMPT_NUMBERS = (
    re.compile(r"(?:requested|resulted in) (\d+) tokens", re.IGNORECASE),  # OpenAI, vLLM
    re.compile(r"request \((\d+) tokens\)", re.IGNORECASE),  # llama.cpp
    re.compile(r"prompt is too long: (\d+) tokens", re.IGNORECASE),  # Anthropic
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


# FastAPI's "1 validation error:" / "2 validation errors:" and pydantic's "... for Model", at the
# start of the text: a report, not a sentence that happens to mention validation.
_REPORT = re.compile(r"\A\s*\d+ validation errors?(?::| for [\w.\[\], ]+\n)")
_REPORT_LOC = re.compile(r"'loc': \(([^)]*)\)")
_LOC_PART = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"|(-?\d+)")
_PYDANTIC_FIELD = re.compile(r"^(?! )(\S[^\n]*)\n {2}\S", re.MULTILINE)


def _detail_list(body: Any) -> list[dict[str, Any]] | None:
    """FastAPI's ``{"detail": [{"loc", "msg", ...}]}`` request-validation list, or None."""
    details = body.get("detail") if isinstance(body, dict) else None
    if isinstance(details, list) and details and all(_located(d) for d in details):
        return details
    return None


def _located(detail: Any) -> bool:
    return isinstance(detail, dict) and "loc" in detail and "msg" in detail


def _texts(body: Any, message: str) -> list[str]:
    fields = error_fields(body)
    texts = [fields["message"]] if isinstance(fields.get("message"), str) else []
    if isinstance(body, str):
        texts.append(body)
    if message:
        texts.append(message)
    return texts


def _report_text(body: Any, message: str) -> str | None:
    """The first text of the error that is a validation report, or None."""
    return next((text for text in _texts(body, message) if _REPORT.match(text)), None)


def _dotted(parts: list[Any]) -> str:
    if parts and parts[0] in ("body", "query"):
        parts = parts[1:]
    return ".".join(str(part) for part in parts)


def rejected_fields(body: Any, message: str = "") -> tuple[str, ...]:
    """The request fields a rejection names as invalid, as dotted paths without FastAPI's
    leading ``body`` (``response_format.type``, ``messages.0.content``), in the order named;
    ``()`` when it names none."""
    found: list[str] = []
    details = _detail_list(body)
    if details is not None:
        found = [_dotted(list(d["loc"])) for d in details if isinstance(d["loc"], list | tuple)]
    elif (report := _report_text(body, message)) is not None:
        locs = _REPORT_LOC.findall(report)
        if locs:
            for loc in locs:
                parts = [q1 or q2 or int(n) for q1, q2, n in _LOC_PART.findall(loc)]
                found.append(_dotted(parts))
        elif " for " in report.split("\n", 1)[0]:  # pydantic: the field path on its own line
            found = [line.strip() for line in _PYDANTIC_FIELD.findall(report.split("\n", 1)[1])]
    else:
        param = error_fields(body).get("param")
        if isinstance(param, str) and param:
            found = [param]
    return tuple(dict.fromkeys(field for field in found if field))


_TEMPLATE_ERROR = re.compile(r"'dict object' has no attribute '\w+'")
"""A chat template (Jinja) that read a field a message lacks, as llama-cpp-python reports it
in an HTTP 500: the same messages fail the same way, so it is not retried."""


def is_request_error_body(body: Any, message: str = "") -> bool:
    """Whether the body (or the error's `message`) says the request itself is invalid, so
    sending it again cannot help: a request-validation report in any of the dialects above, or
    an error whose type or 4xx code says so."""
    if _detail_list(body) is not None or _report_text(body, message) is not None:
        return True
    if _TEMPLATE_ERROR.search(message):
        return True
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
