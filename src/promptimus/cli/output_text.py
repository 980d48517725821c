"""How a module's output is printed: text as text, structured values as JSON."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from ..dto import Message


def output_text(output: Any) -> str:
    if isinstance(output, Message):
        return output.content
    if isinstance(output, str):
        return output
    if isinstance(output, BaseModel):
        return output.model_dump_json(indent=2)
    return json.dumps(to_jsonable_python(output, fallback=str), indent=2, ensure_ascii=False)
