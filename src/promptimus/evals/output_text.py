"""What metrics compare: a module's output as text (`output_text`) or as data (`output_data`).

An output is a `Message` (its `content`), a `str`, a pydantic model (its fields), or any other
value (dicts and lists as JSON, the rest as `str`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel

from ..dto import Message
from ..model_json import decode_json, decode_json_prefix

__all__ = ["output_data", "output_text"]

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    return value


def output_text(value: Any) -> str:
    """The text of an output or expected value."""
    if isinstance(value, Message):
        return value.content
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel | dict | list | tuple):
        return json.dumps(_jsonable(value), ensure_ascii=False, sort_keys=True, default=str)
    return "" if value is None else str(value)


def output_data(value: Any) -> Any:
    """An output or expected value as JSON data: a pydantic model's fields, a dict or list as is,
    text parsed as JSON (plain, in a code fence, or the first object in the text). Raises
    `ValueError` when text holds no JSON."""
    if isinstance(value, Message):  # before BaseModel: a Message is one, but its text counts
        value = value.content
    elif isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if not isinstance(value, str):
        return value
    text = value.strip()
    try:
        return decode_json(text)
    except json.JSONDecodeError:
        pass
    for match in _FENCE.finditer(text):
        try:
            return decode_json(match.group(1))
        except json.JSONDecodeError:
            continue
    for opening in re.finditer(r"[{\[]", text):
        try:
            return decode_json_prefix(text, opening.start())[0]
        except json.JSONDecodeError:
            continue
    raise ValueError(f"the output is not JSON: {text[:80]!r}")
