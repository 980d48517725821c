"""How results show themselves to a person: short one-line texts, and small HTML tables for
Jupyter (`_repr_html_`), every cell escaped.

The result classes (`Usage`, `RunRecord`, `RunResult`, `EvalReport`, `TrainResult`) print a
summary through these helpers; their full data stays one attribute away.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

__all__ = ["clip", "html_table", "plural", "short_text"]

CLIP = 60


def plural(count: int, word: str) -> str:
    """`1 step`, `2 steps`."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def short_text(value: Any) -> str:
    """A value as the text a person wants to see: a message's content (or its tool calls), a
    model's or a container's JSON, anything else its `str`."""
    content = getattr(value, "content", None)
    if isinstance(content, str) and isinstance(value, BaseModel):
        calls = getattr(value, "tool_calls", None) or []
        if content or not calls:
            return content
        names = [getattr(getattr(call, "function", None), "name", "?") for call in calls]
        return "[calls " + ", ".join(str(name) for name in names) + "]"
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return "" if value is None else str(value)


def clip(text: str, limit: int = CLIP) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def html_table(title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A titled HTML table; every title, header and cell is escaped."""
    head = "".join(f"<th>{html.escape(str(cell))}</th>" for cell in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>"
        for row in rows
    )
    return (
        f"<div><p><b>{html.escape(title)}</b></p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )
