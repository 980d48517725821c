"""Text a request cannot carry: a lone surrogate, found before the request is sent.

A Python `str` may hold a lone surrogate (`"\ud800"`, or what `errors="surrogateescape"` makes
of undecodable bytes); UTF-8 has no encoding for one, so the SDK fails with a raw
`UnicodeEncodeError` while it builds the request body, before a byte is sent.
`check_request_text` finds the field and raises `UnencodableText` naming it. A chat request
calls it only once the SDK's encoding has failed (walking every request's messages and tool
schemas would cost each call tens of microseconds); the embedders call it on their texts
before the first batch goes out, which costs one C-level ASCII check per text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import UnencodableText

__all__ = ["check_request_text"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def _find(value: Any, where: str) -> tuple[str, str, int] | None:
    """(field, text, offset) of the first lone surrogate in `value` (a JSON-like tree)."""
    if isinstance(value, str):
        if value.isascii():
            return None
        found = _SURROGATE.search(value)
        return None if found is None else (where, value, found.start())
    if isinstance(value, Mapping):
        for key, item in value.items():
            hit = _find(item, f"{where}.{key}" if where else str(key))
            if hit is not None:
                return hit
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            hit = _find(item, f"{where}[{index}]")
            if hit is not None:
                return hit
    return None


def check_request_text(value: Any, where: str = "", *, request: str = "the request") -> None:
    """Raise `UnencodableText` if any string in `value` (dicts, lists and tuples walked) holds
    a lone surrogate; `where` prefixes the field's path, `request` names what was not sent."""
    hit = _find(value, where)
    if hit is None:
        return
    field, text, offset = hit
    before = text[max(offset - 20, 0) : offset]
    raise UnencodableText(
        f"{field} holds a lone surrogate ({text[offset]!r} after {before!r}), which UTF-8 "
        f"cannot encode, so {request} was not sent. Such text usually comes from bytes decoded "
        "with errors='surrogateescape' (file names, environment variables, subprocess output); "
        "fix it first, e.g. text.encode('utf-8', 'replace').decode('utf-8').",
        where=field,
    )
