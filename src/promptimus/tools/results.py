"""What the model reads back from a tool: its result as text, or as a JSON-able value."""

from __future__ import annotations

from typing import Any

import pydantic_core

from ..dto import Message

__all__ = ["tool_result_to_jsonable", "tool_result_to_text"]


def tool_result_to_text(result: Any) -> str:
    """What the model reads back: None -> "OK", str as is, Message -> its content, anything else
    (pydantic model, dataclass, dict, list, number, bool) -> JSON."""
    if result is None:
        return "OK"
    if isinstance(result, str):
        return result
    if isinstance(result, Message):
        return result.content
    return pydantic_core.to_json(result, fallback=str).decode()


def tool_result_to_jsonable(result: Any) -> Any:
    """Like `tool_result_to_text`, but a JSON-able value to embed in a larger JSON answer."""
    if result is None:
        return "OK"
    if isinstance(result, Message):
        return result.content
    return pydantic_core.to_jsonable_python(result, fallback=str)
