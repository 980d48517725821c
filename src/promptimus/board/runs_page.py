"""The Runs pages: the list of recorded runs (filter by status, search the request and answer)
and one run: its span tree as a waterfall, the compactions of its conversation, the model calls'
messages, the tool calls and their results, what the tools reported while they ran (kept up to
date while the run runs), and the error where it broke."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..dto import HostedToolCall
from ..dto.run_record import ToolCallRecord
from .html import count, esc, number, page, pretty, table, url, when
from .store import read, rows

__all__ = ["run_page", "runs_of_session", "runs_page"]

STATUSES = ("ok", "error", "blocked", "running", "needs_approval")


def _duration(row: dict[str, Any]) -> str:
    if row.get("ended") is None:
        return "…"
    started, ended = number(row.get("started")), number(row.get("ended"))
    if started is None or ended is None:
        return ""
    return f"{(ended - started) * 1000:.0f} ms"


def _cost(value: Any) -> str:
    if value is None:
        return ""
    amount = number(value)
    return esc(value) if amount is None else f"${amount:.6f}"


def _problem(text: str | None) -> str:
    """What of the file could not be read, named above what could."""
    return f"<p class='err problem'>{esc(text)}; the rest is shown.</p>" if text else ""


def _run_row(r: dict[str, Any]) -> list[str]:
    try:
        return [
            f'<a href="{url("runs", str(r["id"]))}">{esc(_short(r["request"]) or r["name"])}</a>'
            + _RESUMED * bool(r.get("resumes")),
            f'<span class="badge {esc(r["status"])}">{esc(r["status"])}</span>',
            esc(when(r["started"])),
            _duration(r),
            count(r["tokens"]),
            _cost(r["cost"]),
            _session_link(r.get("session")),
            f"<span class=err>{esc(_short(r['error']))}</span>",
        ]
    except Exception as exc:  # a row a newer or damaged file holds: named, the others shown
        return [f"<span class=err>this row cannot be shown ({esc(exc)})</span>"] + [""] * 7


def _session_link(session: Any) -> str:
    """The stored conversation a run was a turn of, linked to its page."""
    if not session:
        return ""
    return f'<a class=session href="{url("conversations", str(session))}">{esc(session)}</a>'


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
    found, problem = read(path, sql + " ORDER BY started DESC LIMIT 500", tuple(params))
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
        ["request", "status", "started", "duration", "tokens", "cost", "conversation", "error"],
        (_run_row(r) for r in found),
        empty="" if problem else f"No runs recorded in {path} yet; they show here as they land.",
    )
    body = form + f"<div id=runs>{_problem(problem)}{listed}</div>"
    return page("Runs", "runs", body, live=True)


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


def _short(value: Any, size: int = 90) -> str:
    if value is None or value == "":
        return ""
    text = " ".join(str(value).split())
    return text if len(text) <= size else text[: size - 1] + "…"


def run_page(path: Path, run_id: str) -> str | None:
    found, problem = read(path, "SELECT * FROM runs WHERE id = ?", (run_id,))
    if not found:
        if problem:
            return page("Run", "runs", _problem(problem))
        return None
    run = found[0]
    spans, problem = read(path, "SELECT * FROM spans WHERE run_id = ? ORDER BY started", (run_id,))
    facts = _problem(problem) + (
        f"<dl class=facts><dt>status</dt><dd><span class='badge {esc(run['status'])}'>"
        f"{esc(run['status'])}</span></dd><dt>started</dt><dd>{esc(when(run['started']))}</dd>"
        f"<dt>duration</dt><dd>{_duration(run)}</dd><dt>tokens</dt><dd>{count(run['tokens'])}</dd>"
        f"<dt>cost</dt><dd>{_cost(run['cost'])}</dd>{_links(path, run)}"
        + (
            f"<dt>conversation</dt><dd>{_session_link(run.get('session'))}</dd>"
            * bool(run.get("session"))
        )
        + "</dl>"
        f"<h2>Request</h2><pre class=text>{esc(run['request'])}</pre>"
    )
    if run["answer"] is not None:
        facts += f"<h2>Answer</h2><pre class='text answer'>{esc(_plain(run['answer']))}</pre>"
    if run["error"] and run["status"] == "blocked":
        facts += f"<h2>Blocked</h2><pre class='text blocked'>{esc(run['error'])}</pre>"
    elif run["error"]:
        facts += f"<h2>Error</h2><pre class='text err'>{esc(run['error'])}</pre>"
    body = facts + "<h2>Spans</h2>" + _waterfall(run, spans) + _compactions(spans)
    running = run["status"] == "running"
    body += _tool_calls(spans) + _progress(path, run_id, running=running) + _calls(spans)
    return page(_short(run["request"], 60) or str(run["name"]), "runs", body, live=running)


def _percent(fraction: Any) -> str:
    value = number(fraction)
    return "" if value is None else f"{value * 100:.0f}%"


def _progress(path: Path, run_id: str, *, running: bool) -> str:
    """What the run's tools reported while they ran, per tool call in the order they first
    reported: the latest message and fraction, then each report. A running run's section is
    fetched again every few seconds (the page is live)."""
    found, problem = read(
        path, "SELECT * FROM tool_progress WHERE run_id = ? ORDER BY id", (run_id,)
    )
    calls: dict[str, list[dict[str, Any]]] = {}
    for row in found:
        calls.setdefault(str(row.get("tool_call_id")), []).append(row)
    if not calls and (not problem or "no such table" in problem):
        return "<div id=live></div>" if running else ""
    out = []
    for call_id, reports in calls.items():
        last = reports[-1]
        shown = _percent(last.get("fraction"))
        bar = f"<progress max=1 value={number(last.get('fraction'))}></progress> " if shown else ""
        items = "".join(
            f"<li>{esc(r.get('message'))} <span class=fraction>{_percent(r.get('fraction'))}"
            f"</span> <span class=when>{esc(when(r.get('at')))}</span></li>"
            for r in reports
        )
        out.append(
            f"<div class=progress><h3>{esc(last.get('tool'))} <code>{esc(call_id)}</code></h3>"
            f"<p class=latest>{bar}latest: {esc(last.get('message'))}"
            + (f" ({shown})" if shown else "")
            + f"</p><ol>{items}</ol></div>"
        )
    section = "<h2>Tool progress</h2>" + _problem(problem) + "".join(out)
    return f"<div id=live>{section}</div>" if running else section


def _plain(text: Any) -> str:
    if not isinstance(text, str):
        return str(text)
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def _waterfall(run: dict[str, Any], spans: list[dict[str, Any]]) -> str:
    timed = [s for s in spans if number(s.get("started")) is not None]
    if not timed:
        return "<p class=empty>No spans yet.</p>"
    start = min(float(s["started"]) for s in timed)
    end = max(number(s.get("ended")) or float(s["started"]) for s in timed)
    total = max(end - start, 1e-6)
    depth: dict[str, int] = {}
    out = []
    for span in timed:
        level = depth[str(span["id"])] = depth.get(str(span["parent_id"] or ""), -1) + 1
        began, ended = float(span["started"]), number(span.get("ended")) or end
        left = (began - start) / total * 100
        width = max((ended - began) / total * 100, 0.4)
        took = (ended - began) * 1000
        out.append(
            f'<div class="span {esc(span["status"])}">'
            f'<a class=label href="#span-{esc(span["id"])}" style="padding-left:{level}em">'
            f"<span class=kind>{esc(span['kind'])}</span> {esc(span['name'])}</a>"
            f'<div class=track><div class=bar style="left:{left:.2f}%;width:{width:.2f}%">'
            f"</div></div><span class=ms>{took:.0f} ms</span></div>"
        )
    return "<div class=waterfall>" + "".join(out) + "</div>"


def _compactions(spans: list[dict[str, Any]]) -> str:
    """A row per compaction of the run's conversation: a compactor's call returns what it did
    (the steps, its size in tokens before and after, the summary's usage); None when it had
    nothing to do."""
    found = []
    for span in spans:
        try:
            done = json.loads(span["output"]) if isinstance(span["output"], str) else None
        except (ValueError, RecursionError):
            continue
        if not isinstance(done, dict) or not {"steps", "tokens_before", "tokens_after"} <= set(
            done
        ):
            continue
        steps, usage = done["steps"], done.get("usage")
        named = ", ".join(map(str, steps)) if isinstance(steps, list) else str(steps)
        spent = usage.get("total_tokens") if isinstance(usage, dict) else None
        found.append(
            [
                esc(named),
                count(done["tokens_before"]),
                count(done["tokens_after"]),
                count(spent),
                f'<a href="#span-{esc(span["id"])}">{esc(span["name"])}</a>',
            ]
        )
    if not found:
        return ""
    head = ["steps", "tokens before", "tokens after", "its own tokens", "call"]
    return "<h2>Compactions</h2>" + table(head, found, empty="")


def _tool_calls(spans: list[dict[str, Any]]) -> str:
    """The run's tool calls in the order they happened: those that ran here (tool spans) and
    those the provider's server ran while it wrote a reply (read from the reply), marked so."""
    found: list[list[str]] = []
    for span in spans:
        if span["kind"] == "TOOL":
            found.append(
                [
                    esc(str(span["name"]).rsplit(".", 1)[-1]),
                    f"<pre>{esc(pretty(span['input']))}</pre>",
                    f"<pre>{esc(_plain(span['output']) if span['output'] else span['error'] or '')}"
                    "</pre>",
                    f'<span class="badge {esc(span["status"])}">{esc(span["status"])}</span>',
                ]
            )
        elif span["kind"] == "LLM":
            found.extend(_hosted_row(entry) for entry in _hosted_calls(_json(span["output"])))
    if not found:
        return ""
    listed = table(["tool", "arguments", "result", "status"], found, empty="")
    return f"<h2>Tool calls</h2><div class=tools>{listed}</div>"


def _json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None


def _hosted_calls(reply: Any) -> list[ToolCallRecord]:
    """The calls the server ran while it wrote `reply` (a message as JSON data); none when it
    is no reply or a damaged one."""
    calls = reply.get("hosted_calls") if isinstance(reply, dict) else None
    if not isinstance(calls, list):
        return []
    try:
        return [ToolCallRecord.of_hosted(HostedToolCall.model_validate(call)) for call in calls]
    except (ValueError, TypeError):
        return []


def _hosted_row(entry: ToolCallRecord) -> list[str]:
    return [
        esc(entry.name),
        f"<pre>{esc(pretty(entry.arguments))}</pre>",
        f"<pre>{esc(_plain(entry.result or '') if entry.error is None else entry.error)}</pre>",
        "<span class='badge server' title='the provider ran it; nothing ran here'>"
        "ran on the server</span>",
    ]


def _calls(spans: list[dict[str, Any]]) -> str:
    out = []
    for span in spans:
        try:
            out.append(_call(span))
        except Exception as exc:  # a row a damaged file holds: named, the others shown
            out.append(f"<p class=err>A span cannot be shown ({esc(exc)}).</p>")
    return "<h2>Calls</h2>" + "".join(out)


def _call(span: dict[str, Any]) -> str:
    head = (
        f'<summary id="span-{esc(span["id"])}"><span class=kind>{esc(span["kind"])}</span> '
        f"{esc(span['name'])}"
    )
    if span["model"]:
        head += f" · {esc(span['model'])}"
    if span["prompt_tokens"] is not None:
        head += f" · {count(span['prompt_tokens'])}+{count(span['completion_tokens'])} tokens"
    head += "</summary>"
    if span["kind"] == "LLM":
        inner = _messages(span["input"]) + "<h3>Reply</h3>" + _messages(span["output"])
    else:
        inner = f"<h3>Input</h3><pre>{esc(pretty(span['input']))}</pre>"
        inner += f"<h3>Output</h3><pre>{esc(pretty(span['output']))}</pre>"
    if span["error"]:
        inner += f"<h3>Error</h3><pre class=err>{esc(span['error'])}</pre>"
    opened = " open" if span["kind"] == "LLM" or span["error"] else ""
    return f"<details class=call{opened}>{head}{inner}</details>"


def _messages(text: Any) -> str:
    if not text:
        return "<p class=empty>nothing</p>"
    try:
        value = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return f"<pre>{esc(text)}</pre>"
    messages = value if isinstance(value, list) else [value]
    out = []
    for message in messages:
        if not isinstance(message, dict):
            out.append(f"<pre>{esc(json.dumps(message, ensure_ascii=False))}</pre>")
            continue
        role = str(message.get("role", ""))
        body = f"<pre>{esc(message.get('content', ''))}</pre>" if message.get("content") else ""
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            function = function if isinstance(function, dict) else {}
            body += (
                f"<p class=toolcall>→ {esc(function.get('name'))}"
                f"({esc(function.get('arguments'))})</p>"
            )
        for entry in _hosted_calls(message):
            body += (
                f"<p class=toolcall>⇢ {esc(entry.name)}({esc(entry.arguments)}) "
                "<span class='badge server'>ran on the server</span></p>"
            )
        out.append(f'<div class="msg {esc(role)}"><span class=role>{esc(role)}</span>{body}</div>')
    return "".join(out)


def runs_of_session(path: Path, session_id: str) -> str:
    """The runs recorded as turns of the conversation `session_id`, linked (for its page)."""
    found, problem = read(
        path, "SELECT * FROM runs WHERE session = ? ORDER BY started", (session_id,)
    )
    if not found and (not problem or "no such column" in problem):  # none, or an older file
        return ""
    listed = table(
        ["request", "status", "started", "duration", "tokens", "cost", "conversation", "error"],
        (_run_row(r) for r in found),
        empty="",
    )
    return f"<h2>Runs</h2>{_problem(problem)}<div class=runs>{listed}</div>"
