"""A module's output as the text a protocol sends: text as text, structured values as JSON."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from ..dto import Message

__all__ = ["served_text"]


def served_text(output: Any) -> str:
    if isinstance(output, Message):
        return output.content
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    return json.dumps(to_jsonable_python(output, fallback=str), ensure_ascii=False)
