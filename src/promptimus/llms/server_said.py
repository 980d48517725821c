"""What an error object a server sent inside a ``200 OK`` says, quoted for `ErrorInReply`."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["said_by_server"]

_LONGEST = 500


def said_by_server(error: Any) -> str:
    """The error's message (with its code or type), quoted; an error given as text is quoted
    whole, and one without a message is shown as the JSON it is."""
    message = error.get("message") if isinstance(error, dict) else error
    if not isinstance(message, str) or not message.strip():
        message = json.dumps(error, ensure_ascii=False, default=str)
    said = repr(message if len(message) <= _LONGEST else message[: _LONGEST - 3] + "...")
    if not isinstance(error, dict):
        return said
    code = error.get("code")
    if isinstance(code, str | int) and not isinstance(code, bool):
        return f"{said} (code {code!r})"
    kind = error.get("type") or error.get("status")
    return f"{said} ({kind})" if isinstance(kind, str) and kind else said
