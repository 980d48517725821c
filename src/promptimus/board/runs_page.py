"""The Runs pages: the list of recorded runs (filter by status, search the request and answer)
and one run: its span tree as a waterfall, the model calls' messages, the tool calls and their
results, and the error where it broke."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .html import esc, page, pretty, table, url, when
from .store import rows

__all__ = ["run_page", "runs_page"]

STATUSES = ("ok", "error", "running", "needs_approval")


def _duration(row: dict[str, Any]) -> str:
    if row.get("ended") is None:
        return "…"
    return f"{(row['ended'] - row['started']) * 1000:.0f} ms"


def _cost(value: float | None) -> str:
    return "" if value is None else f"${value:.6f}"


def runs_page(path: Path, query: str, status: str) -> str:
    sql = "SELECT * FROM runs"
    where, params = [], []
    if status in STATUSES:
        where.append("status = ?")
        params.append(status)
    if query:
        where.append("(request LIKE ? OR answer LIKE ? OR error LIKE ? OR name LIKE ?)")
        params += [f"%{query}%"] * 4
    if where:
        sql += " WHERE " + " AND ".join(where)
    found = rows(path, sql + " ORDER BY started DESC LIMIT 500", tuple(params))
    options = "".join(
        f'<option value="{s}"{" selected" if s == status else ""}>{s}</option>' for s in STATUSES
    )
    form = (
        '<form class=filter method=get action="/runs">'
        f'<input type=search name=q value="{esc(query)}" placeholder="search requests, answers">'
        f'<select name=status><option value="">any status</option>{options}</select>'
        "<button>Filter</button></form>"
    )
    listed = table(
        ["request", "status", "started", "duration", "tokens", "cost", "error"],
        (
            [
                f'<a href="{url("runs", r["id"])}">{esc(_short(r["request"]) or r["name"])}</a>'
                + _RESUMED * bool(r.get("resumes")),
                f'<span class="badge {esc(r["status"])}">{esc(r["status"])}</span>',
                esc(when(r["started"])),
                _duration(r),
                str(r["tokens"] or 0),
                _cost(r["cost"]),
                f"<span class=err>{esc(_short(r['error']))}</span>",
            ]
            for r in found
        ),
        empty=f"No runs recorded in {path} yet; they show here as they land.",
    )
    return page("Runs", "runs", form + f"<div id=runs>{listed}</div>", live=True)


_RESUMED = (
    '<span class="badge resumed" title="goes on with a run that paused for approval">resumed</span>'
)


def _links(path: Path, run: dict[str, Any]) -> str:
    """The run a resumed run goes on with, and the run that went on with a paused one."""
    out = ""
    if run.get("resumes"):
        found = rows(path, "SELECT id FROM runs WHERE paused_state = ?", (run["resumes"],))
        target = (
            f'<a href="{url("runs", found[0]["id"])}">the run that paused for approval</a>'
            if found
            else "a run that paused for approval (not recorded here)"
        )
        out += f"<dt>continues</dt><dd class=continues>{target}</dd>"
    if run.get("paused_state"):
        found = rows(path, "SELECT id, status FROM runs WHERE resumes = ?", (run["paused_state"],))
        for later in found:
            out += (
                f'<dt>continued in</dt><dd class=continued><a href="{url("runs", later["id"])}">'
                f'the resumed run</a> <span class="badge {esc(later["status"])}">'
                f"{esc(later['status'])}</span></dd>"
            )
    return out


def _short(text: str | None, size: int = 90) -> str:
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"


def run_page(path: Path, run_id: str) -> str | None:
    found = rows(path, "SELECT * FROM runs WHERE id = ?", (run_id,))
    if not found:
        return None
    run = found[0]
    spans = rows(path, "SELECT * FROM spans WHERE run_id = ? ORDER BY started", (run_id,))
    facts = (
        f"<dl class=facts><dt>status</dt><dd><span class='badge {esc(run['status'])}'>"
        f"{esc(run['status'])}</span></dd><dt>started</dt><dd>{esc(when(run['started']))}</dd>"
        f"<dt>duration</dt><dd>{_duration(run)}</dd><dt>tokens</dt><dd>{run['tokens'] or 0}</dd>"
        f"<dt>cost</dt><dd>{_cost(run['cost'])}</dd>{_links(path, run)}</dl>"
        f"<h2>Request</h2><pre class=text>{esc(run['request'])}</pre>"
    )
    if run["answer"] is not None:
        facts += f"<h2>Answer</h2><pre class='text answer'>{esc(_plain(run['answer']))}</pre>"
    if run["error"]:
        facts += f"<h2>Error</h2><pre class='text err'>{esc(run['error'])}</pre>"
    body = facts + "<h2>Spans</h2>" + _waterfall(run, spans) + _tool_calls(spans) + _calls(spans)
    return page(_short(run["request"], 60) or run["name"], "runs", body)


def _plain(text: str) -> str:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def _waterfall(run: dict[str, Any], spans: list[dict[str, Any]]) -> str:
    if not spans:
        return "<p class=empty>No spans yet.</p>"
    start = min(s["started"] for s in spans)
    end = max((s["ended"] or s["started"]) for s in spans)
    total = max(end - start, 1e-6)
    depth: dict[str, int] = {}
    out = []
    for span in spans:
        level = depth[span["id"]] = depth.get(span["parent_id"] or "", -1) + 1
        left = (span["started"] - start) / total * 100
        width = max(((span["ended"] or end) - span["started"]) / total * 100, 0.4)
        took = ((span["ended"] or end) - span["started"]) * 1000
        out.append(
            f'<div class="span {esc(span["status"])}">'
            f'<a class=label href="#span-{esc(span["id"])}" style="padding-left:{level}em">'
            f"<span class=kind>{esc(span['kind'])}</span> {esc(span['name'])}</a>"
            f'<div class=track><div class=bar style="left:{left:.2f}%;width:{width:.2f}%">'
            f"</div></div><span class=ms>{took:.0f} ms</span></div>"
        )
    return "<div class=waterfall>" + "".join(out) + "</div>"


def _tool_calls(spans: list[dict[str, Any]]) -> str:
    tools = [s for s in spans if s["kind"] == "TOOL"]
    if not tools:
        return ""
    listed = table(
        ["tool", "arguments", "result", "status"],
        (
            [
                esc(s["name"].rsplit(".", 1)[-1]),
                f"<pre>{esc(pretty(s['input']))}</pre>",
                f"<pre>{esc(_plain(s['output']) if s['output'] else s['error'] or '')}</pre>",
                f'<span class="badge {esc(s["status"])}">{esc(s["status"])}</span>',
            ]
            for s in tools
        ),
        empty="",
    )
    return f"<h2>Tool calls</h2><div class=tools>{listed}</div>"


def _calls(spans: list[dict[str, Any]]) -> str:
    out = []
    for span in spans:
        head = (
            f'<summary id="span-{esc(span["id"])}"><span class=kind>{esc(span["kind"])}</span> '
            f"{esc(span['name'])}"
        )
        if span["model"]:
            head += f" · {esc(span['model'])}"
        if span["prompt_tokens"] is not None:
            head += f" · {span['prompt_tokens']}+{span['completion_tokens'] or 0} tokens"
        head += "</summary>"
        if span["kind"] == "LLM":
            inner = _messages(span["input"]) + "<h3>Reply</h3>" + _messages(span["output"])
        else:
            inner = f"<h3>Input</h3><pre>{esc(pretty(span['input']))}</pre>"
            inner += f"<h3>Output</h3><pre>{esc(pretty(span['output']))}</pre>"
        if span["error"]:
            inner += f"<h3>Error</h3><pre class=err>{esc(span['error'])}</pre>"
        opened = " open" if span["kind"] == "LLM" or span["error"] else ""
        out.append(f"<details class=call{opened}>{head}{inner}</details>")
    return "<h2>Calls</h2>" + "".join(out)


def _messages(text: str | None) -> str:
    if not text:
        return "<p class=empty>nothing</p>"
    try:
        value = json.loads(text)
    except ValueError:
        return f"<pre>{esc(text)}</pre>"
    messages = value if isinstance(value, list) else [value]
    out = []
    for message in messages:
        if not isinstance(message, dict):
            out.append(f"<pre>{esc(json.dumps(message, ensure_ascii=False))}</pre>")
            continue
        role = str(message.get("role", ""))
        body = f"<pre>{esc(message.get('content', ''))}</pre>" if message.get("content") else ""
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            body += (
                f"<p class=toolcall>→ {esc(function.get('name'))}"
                f"({esc(function.get('arguments'))})</p>"
            )
        out.append(f'<div class="msg {esc(role)}"><span class=role>{esc(role)}</span>{body}</div>')
    return "".join(out)
