"""Gemini API errors in the terms the retry layer reads (`promptimus.transport.retry`).

The google-genai SDK raises ``google.genai.errors.APIError`` with Google's error body
(``{"error": {"code", "message", "status", "details"}}``). `GeminiAPIError` restates it with
what `classify` looks for: the HTTP status, the response headers (``Retry-After``, or the
body's ``RetryInfo.retryDelay`` as one), and an error body whose ``type`` says what the
status means (``INVALID_ARGUMENT`` a rejected request, an input larger than the model's limit
the context window) and whose ``param`` names the field a ``BadRequest`` report rejected
(``response_format`` for the response schema, so structured output can fall back).

The SDK's error, and the HTTP request inside it that holds the key, is not chained: the
retry layer sees only this one, which holds no header of the request.
"""

from __future__ import annotations

import re
from typing import Any

from promptimus.errors import MalformedReply
from promptimus.llms.server_said import said_by_server

__all__ = ["GeminiAPIError", "from_sdk_error", "malformed_error_event"]

_OVERFLOW = re.compile(
    r"input token count(?: \(|\s+)(\d+)\)? exceeds the maximum number of tokens allowed"
    r"(?: \(|\s+)(\d+)",
    re.IGNORECASE,
)
_REJECTING_STATUSES = frozenset(
    {"INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE", "NOT_FOUND"}
)
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


class _Response:
    """The part of an HTTP response the retry layer reads: its headers."""

    __slots__ = ("headers",)

    def __init__(self, headers: dict[str, str]) -> None:
        self.headers = headers


class GeminiAPIError(Exception):
    """An error status from the Gemini API (``status_code``, ``body``, ``response.headers``)."""

    def __init__(self, status_code: int, body: dict[str, Any], headers: dict[str, str]) -> None:
        self.status_code = status_code
        self.body = body
        self.message = str(body["error"].get("message") or "")
        self.response = _Response(headers)
        status = body["error"].get("status") or ""
        super().__init__(f"{status_code} {status}: {self.message}".strip())


def _details(error: dict[str, Any]) -> list[dict[str, Any]]:
    details = error.get("details")
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def _retry_delay(details: list[dict[str, Any]]) -> str | None:
    for detail in details:
        if str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DELAY.match(str(detail.get("retryDelay", "")))
            if match:
                return match.group(1)
    return None


def _rejected_field(details: list[dict[str, Any]], error: dict[str, Any]) -> str | None:
    for detail in details:
        violations = detail.get("fieldViolations") or ()
        if not isinstance(violations, list | tuple):
            raise MalformedReply(
                f"error.details[].fieldViolations is {type(violations).__name__} "
                f"({violations!r:.40}), expected a list; the server said: "
                f"{said_by_server(error)}"
            )
        for violation in violations:
            field = violation.get("field") if isinstance(violation, dict) else None
            if isinstance(field, str) and field:
                flat = field.replace("_", "").lower()
                if "responseschema" in flat or "responsejsonschema" in flat:
                    return "response_format"
                if "responsemimetype" in flat:
                    return "response_format"
                return field
    return None


def error_body(status_code: int, raw: Any) -> dict[str, Any]:
    """Google's error body, with ``type`` (and ``param``, context numbers) added."""
    if isinstance(raw, list) and len(raw) == 1:
        raw = raw[0]
    error = raw.get("error", raw) if isinstance(raw, dict) else {}
    if not isinstance(error, dict):
        error = {"message": str(error)}
    message = error.get("message")
    fields: dict[str, Any] = {
        "code": status_code,
        "message": message if isinstance(message, str) else "",
        "status": error.get("status") if isinstance(error.get("status"), str) else "",
    }
    details = _details(error)
    overflow = _OVERFLOW.search(fields["message"])
    if overflow is not None:
        fields["type"] = "context_length_exceeded"
        fields["n_prompt_tokens"] = int(overflow.group(1))
        fields["n_ctx"] = int(overflow.group(2))
    elif status_code < 500 and (fields["status"] in _REJECTING_STATUSES or status_code == 400):
        fields["type"] = "invalid_request_error"
    field = _rejected_field(details, error)
    if field is not None:
        fields["param"] = field
    return {"error": fields}


def from_sdk_error(exc: Any) -> GeminiAPIError:
    """The `GeminiAPIError` for a ``google.genai.errors.APIError``."""
    code = exc.code if isinstance(exc.code, int) else 500
    body = error_body(code, exc.details)
    response = getattr(exc, "response", None)
    raw_headers = getattr(response, "headers", None)
    headers: dict[str, str] = {}
    if raw_headers is not None:
        try:
            headers = {str(k).lower(): str(v) for k, v in raw_headers.items()}
        except (AttributeError, TypeError):
            headers = {}
    raw = exc.details[0] if isinstance(exc.details, list) and exc.details else exc.details
    error = raw.get("error", raw) if isinstance(raw, dict) else None
    if isinstance(error, dict) and not {"retry-after", "retry-after-ms"} & headers.keys():
        delay = _retry_delay(_details(error))
        if delay is not None:
            headers["retry-after"] = delay
    return GeminiAPIError(code, body, headers)


def malformed_error_event(exc: BaseException) -> MalformedReply | None:
    """The `MalformedReply` for a stream error event the SDK could not read (its ``error`` not
    an object, or its ``code`` not a number: the SDK fails with a TypeError or AttributeError
    while raising it), else None."""
    if not isinstance(exc, TypeError | AttributeError):
        return None
    event: Any = None
    trace = exc.__traceback__
    while trace is not None:
        frame = trace.tb_frame
        if frame.f_globals.get("__name__", "").startswith("google.genai"):
            event = frame.f_locals.get("chunk_json", event)
        trace = trace.tb_next
    if not isinstance(event, dict) or "error" not in event:
        return None
    error = event["error"]
    if not isinstance(error, dict):
        return MalformedReply(
            f"a stream error event's error is {type(error).__name__}, expected an object; "
            f"the server said: {said_by_server(error)}"
        )
    code = error.get("code")
    return MalformedReply(
        f"a stream error event's error.code is {type(code).__name__} ({code!r:.40}), expected "
        f"an HTTP status number; the server said: {said_by_server(error)}"
    )
