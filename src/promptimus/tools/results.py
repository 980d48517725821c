"""What the model reads back from a tool: its result as text, or as a JSON-able value.

Text goes as it is; a `Message` as its content; everything else as JSON: dicts, lists,
numbers, dataclasses, pydantic models, dates, UUIDs, enums, paths. A value with no JSON form
(an object of a plain class) is refused with `ToolResultNotSerializable`, which the agent sends
back as the tool's failure, instead of the object's repr (`<Order object at 0x...>`), which
tells the model nothing and would make the call look like a success.
"""

from __future__ import annotations

from typing import Any

import pydantic_core

from ..dto import Message
from ..errors import ToolResultNotSerializable

__all__ = ["tool_result_to_jsonable", "tool_result_to_text"]


def _not_serializable(result: Any, exc: Exception) -> ToolResultNotSerializable:
    kind = type(result)
    return ToolResultNotSerializable(
        f"The tool returned a {kind.__module__}.{kind.__qualname__} object, which has no JSON "
        f"form ({exc}), so its result cannot be shown. The tool's code must return text, a "
        "dict, a list, a number, a dataclass or a pydantic model."
    )


def tool_result_to_text(result: Any) -> str:
    """What the model reads back: None -> "OK", str as is, Message -> its content, anything else
    (pydantic model, dataclass, dict, list, number, bool) -> JSON; `ToolResultNotSerializable`
    for a value with no JSON form."""
    if result is None:
        return "OK"
    if isinstance(result, str):
        return result
    if isinstance(result, Message):
        return result.content
    try:
        return pydantic_core.to_json(result).decode()
    except pydantic_core.PydanticSerializationError as exc:
        raise _not_serializable(result, exc) from exc


def tool_result_to_jsonable(result: Any) -> Any:
    """Like `tool_result_to_text`, but a JSON-able value to embed in a larger JSON answer."""
    if result is None:
        return "OK"
    if isinstance(result, Message):
        return result.content
    try:
        return pydantic_core.to_jsonable_python(result)
    except pydantic_core.PydanticSerializationError as exc:
        raise _not_serializable(result, exc) from exc
