"""The board's HTML: a page layout and small helpers. Every value shown goes through `esc`
(HTML-escaped), so a prompt, a tool argument or a model's reply is shown as text, never run."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote

from .parameter_diff import Change, one_line

__all__ = ["count", "diff_block", "esc", "number", "page", "table", "when"]

NAV = [
    ("runs", "/runs", "Runs"),
    ("training", "/training", "Training"),
    ("conversations", "/conversations", "Conversations"),
    ("approvals", "/approvals", "Approvals"),
    ("checkpoints", "/checkpoints", "Checkpoints"),
]


def esc(value: Any) -> str:
    """`value` as HTML text (None shows as nothing)."""
    return "" if value is None else escape(str(value), quote=True)


def url(*parts: str) -> str:
    """A path from parts, each percent-encoded (ids may hold slashes or spaces)."""
    return "/" + "/".join(quote(part, safe="") for part in parts)


def page(title: str, active: str, body: str, *, live: bool = False) -> str:
    links = "".join(
        f'<a href="{href}"{" class=on" if key == active else ""}>{label}</a>'
        for key, href, label in NAV
    )
    live_mark = ' data-live="1"' if live else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · promptimus board</title>"
        '<link rel=icon href="data:,"><link rel=stylesheet href="/static/board.css">'
        '<script src="/static/board.js" defer></script></head>'
        f'<body{live_mark}><header><a class=brand href="/runs">promptimus board</a>'
        f"<nav>{links}</nav></header><main><h1>{esc(title)}</h1>{body}</main></body></html>"
    )


def table(head: Sequence[str], rows: Iterable[Sequence[str]], *, empty: str) -> str:
    """A table; cells are HTML already (escape values with `esc`)."""
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    if not body:
        return f"<p class=empty>{esc(empty)}</p>"
    header = "".join(f"<th>{esc(name)}</th>" for name in head)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def number(value: Any) -> float | None:
    """`value` if it is a finite number (not a bool), else None: a file written elsewhere may
    hold any type in any column."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def count(value: Any) -> str:
    """A count read from a file, as HTML: a whole number as digits, anything else escaped."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return "0" if value is None else esc(value)


def when(seconds: Any) -> str:
    """A Unix time as text (anything else as it is, for `esc`)."""
    if seconds is None:
        return ""
    value = number(seconds)
    if value is None:
        return str(seconds)
    try:
        return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return str(seconds)


def pretty(text: Any) -> str:
    """JSON text indented for reading (other text as it is)."""
    if text is None:
        return ""
    if not isinstance(text, str):
        return str(text)
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def diff_lines(lines: Sequence[str]) -> str:
    out = []
    for line in lines:
        css = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "")
        if line.startswith(("+++", "---")):
            css = "file"
        out.append(f'<span class="{css}">{esc(line)}</span>')
    return "<pre class=diff>" + "\n".join(out) + "</pre>"


def diff_block(changes: Sequence[Change], *, same: str) -> str:
    """The changes as `promptimus diff` lists them: removed, added, changed (texts line by
    line)."""
    if not changes:
        return f"<p class=empty>{esc(same)}</p>"
    parts = []
    for change in changes:
        if change.kind == "removed":
            parts.append(f"<p class=del>- removed {esc(change.key)} = {esc(one_line(change.old))}")
        elif change.kind == "added":
            parts.append(f"<p class=add>+ added {esc(change.key)} = {esc(one_line(change.new))}")
        elif change.lines:
            parts.append(f"<p class=chg>~ changed {esc(change.key)}</p>{diff_lines(change.lines)}")
        else:
            old, new = one_line(change.old), one_line(change.new)
            parts.append(f"<p class=chg>~ changed {esc(change.key)}: {esc(old)} → {esc(new)}</p>")
    return "<div class=changes>" + "".join(parts) + "</div>"


def text_diff(old: str, new: str, label_a: str, label_b: str) -> str:
    lines = difflib.unified_diff(old.split("\n"), new.split("\n"), label_a, label_b, lineterm="")
    return diff_lines(list(lines))
