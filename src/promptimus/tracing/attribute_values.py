"""Turning arbitrary Python values into span attribute values that can never break a call.

Attribute values must be str, bool, int, float or sequences of one of them. Everything else is
serialized to JSON (pydantic models, dataclasses, messages, dicts), or shown with `repr` when it
is not JSON-able; text longer than the limit is cut with a note saying how much was dropped; and
every known secret (API keys) is replaced by `[REDACTED]` before it leaves the process.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import pydantic_core

from . import conventions as c

REDACTED = "[REDACTED]"

# Request options whose values are credentials or may carry them (headers, query strings).
_SECRET_KEYS = re.compile(
    r"(api[_-]?key|authorization|secret|password|credential|^(extra_)?headers$|^extra_query$"
    r"|^default_headers$|^access[_-]?token$|^auth$)",
    re.IGNORECASE,
)


class ValueEncoder:
    """Encodes values for attributes: truncated at `max_chars`, secrets redacted."""

    __slots__ = ("max_chars", "secrets")

    def __init__(self, max_chars: int) -> None:
        if max_chars < 64:
            raise ValueError(f"max_value_chars must be >= 64, got {max_chars}.")
        self.max_chars = max_chars
        self.secrets: set[str] = set()

    def add_secrets(self, values: Iterable[str]) -> None:
        """Redact `values` from now on, each also as JSON text holds it when that differs (a
        quote or a backslash in a password is escaped in the values written as JSON)."""
        for value in values:
            if isinstance(value, str) and len(value) >= 4:
                self.secrets.add(value)
                escaped = json.dumps(value, ensure_ascii=False)[1:-1]
                if escaped != value:
                    self.secrets.add(escaped)

    def text(self, value: str) -> str:
        return self.cut(self.redact(value))

    def redact(self, value: str) -> str:
        """`value` with every known secret replaced by `[REDACTED]`."""
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def cut(self, value: str) -> str:
        """`value`, cut at the limit with a note saying how much was dropped."""
        if len(value) > self.max_chars:
            dropped = len(value) - self.max_chars
            value = f"{value[: self.max_chars]}… [truncated {dropped} characters]"
        return value

    def json(self, value: Any) -> str:
        """JSON of `value` (non-JSON parts shown with `str`), or its `repr` as a last resort."""
        try:
            raw = pydantic_core.to_json(
                value, fallback=_fallback, serialize_unknown=True, inf_nan_mode="strings"
            ).decode()
        except Exception:
            raw = _safe_repr(value)
        return self.text(raw)

    def value(self, value: Any) -> tuple[str, str]:
        """`(text, mime type)` for `input.value` / `output.value`."""
        if isinstance(value, str):
            return self.text(value), c.TEXT
        if hasattr(value, "role") and hasattr(value, "content") and not _has_tool_calls(value):
            content = value.content
            if isinstance(content, str):
                return self.text(content), c.TEXT
        return self.json(value), c.JSON

    def params(self, params: Mapping[str, Any]) -> str:
        """Request options as JSON, credentials left out."""
        return self.json(
            {
                key: REDACTED if _SECRET_KEYS.search(str(key)) else value
                for key, value in params.items()
            }
        )


def _has_tool_calls(message: Any) -> bool:
    return bool(getattr(message, "tool_calls", None))


def _fallback(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    return _safe_repr(value)


def _safe_repr(value: Any) -> str:
    try:
        return str(value)
    except Exception:
        try:
            return repr(value)
        except Exception:
            return f"<{type(value).__name__}>"
