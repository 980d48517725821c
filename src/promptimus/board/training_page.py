"""The Training pages: every `fit` under `--fits` (a folder holding `history.jsonl`), and one fit:
its score against spend as an inline SVG chart, the frontier over its objectives (a fit with
several), each candidate with its parent, the diff of its prompt against the parent's, whether
it was kept, and the best checkpoint against the start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..checkpoint.read import read_checkpoint
from ..optim.frontier import non_dominated
from .html import count, diff_block, esc, number, page, table, text_diff, url
from .parameter_diff import flat_parameters, parameter_changes
from .redaction import page_redactor

__all__ = ["fit_page", "fits", "frontier_section", "step_page", "training_page"]

HISTORY = "history.jsonl"
BEST = "best.toml"


def fits(root: Path | None) -> list[Path]:
    """The fit folders under `root` (itself included), by name."""
    if root is None or not root.is_dir():
        return []
    return sorted(p.parent for p in root.rglob(HISTORY) if p.is_file())


def history(folder: Path) -> list[dict[str, Any]]:
    return read_history(folder)[0]


def read_history(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The entries of the fit's history.jsonl that can be read, and what could not be (a line
    cut by a crash, a line that is not a JSON object, a file that is not text): the rest is
    still shown."""
    entries: list[dict[str, Any]] = []
    problems: list[str] = []
    try:
        text = (folder / HISTORY).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return entries, [f"{HISTORY} cannot be read ({exc})"]
    for number_, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            problems.append(f"line {number_} of {HISTORY} is not JSON")
            continue
        if isinstance(entry, dict):
            entries.append(entry)
        else:
            problems.append(f"line {number_} of {HISTORY} is not a JSON object")
    return entries, problems


def _problems(problems: list[str]) -> str:
    if not problems:
        return ""
    shown = "; ".join(problems[:5]) + (
        f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
    )
    return f"<p class='err problem'>{esc(shown)}: left out, the rest is shown.</p>"


def training_page(root: Path | None) -> str:
    if root is None:
        return page("Training", "training", "<p class=empty>Start the board with --fits DIR.</p>")
    found = fits(root)
    listed = []
    for folder in found:
        entries = history(folder)
        scores = (number(e.get("val_score")) for e in entries if e.get("accepted") is True)
        best = max((score for score in scores if score is not None), default=None)
        name = str(folder.relative_to(root)) if folder != root else folder.name
        listed.append(
            [
                f'<a href="/training/fit?dir={esc(url(name)[1:])}">{esc(name)}</a>',
                str(len(entries) - 1 if entries else 0),
                esc(_score(entries[0].get("val_score")) if entries else ""),
                esc(_score(best)),
                count(entries[-1].get("tokens", 0) if entries else 0),
            ]
        )
    body = table(
        ["fit", "candidates", "baseline", "best", "tokens spent"],
        listed,
        empty=f"No fit under {root} yet (a fit writes history.jsonl in its checkpoint_dir).",
    )
    return page("Training", "training", body)


def _score(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else ""


def fit_page(root: Path, name: str) -> str | None:
    folder = (root / name).resolve()
    if not folder.is_relative_to(root.resolve()) or not (folder / HISTORY).is_file():
        return None
    entries, problems = read_history(folder)
    if not entries and not problems:
        return None
    body = _problems(problems) + "<h2>Score against spend</h2>" + chart(entries)
    body += frontier_section(entries)
    body += "<h2>Candidates</h2>" + _candidates(entries, name)
    if entries:
        body += "<h2>Best checkpoint against the start</h2>" + _best_diff(folder, entries)
    return page(f"Fit {name}", "training", body)


def _spend(entry: dict[str, Any], by_tokens: bool) -> float:
    return number(entry.get("tokens" if by_tokens else "calls")) or 0.0


def chart(entries: list[dict[str, Any]]) -> str:
    """Each candidate's validation score against what had been spent (tokens, or module calls
    when no token was counted): kept candidates filled, the best-so-far line stepped. (A
    proposal turned down on its minibatch has no validation score: it is in the table only.)"""
    entries = [e for e in entries if number(e.get("val_score")) is not None]
    if not entries:
        return "<p class=empty>No candidate was scored on the validation set yet.</p>"
    by_tokens = any(number(e.get("tokens")) for e in entries)
    xs = [_spend(e, by_tokens) for e in entries]
    ys = [number(e.get("val_score")) or 0.0 for e in entries]
    width, height, pad = 640, 260, 44
    x_max = max(max(xs), 1.0)
    y_min, y_max = min(0.0, *ys), max(1.0, *ys)

    def px(x: float) -> float:
        return pad + x / x_max * (width - 2 * pad)

    def py(y: float) -> float:
        return height - pad - (y - y_min) / (y_max - y_min or 1) * (height - 2 * pad)

    best, steps = ys[0], []
    for x, y, entry in zip(xs, ys, entries, strict=True):
        steps.append(f"{px(x):.1f},{py(best):.1f}")
        if entry.get("accepted"):
            best = max(best, y)
            steps.append(f"{px(x):.1f},{py(best):.1f}")
    points = "".join(
        f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="5" class="{_kept(e)}">'
        f"<title>candidate {esc(e.get('candidate'))}: {y:.3f} at {x:.0f}</title></circle>"
        for x, y, e in zip(xs, ys, entries, strict=True)
    )
    unit = "tokens" if by_tokens else "module calls"
    axes = (
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
        'class="axis"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" class="axis"/>'
        f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle">spend ({unit})</text>'
        f'<text x="{pad - 6}" y="{py(y_max) + 4:.1f}" text-anchor="end">{y_max:.2f}</text>'
        f'<text x="{pad - 6}" y="{py(y_min) + 4:.1f}" text-anchor="end">{y_min:.2f}</text>'
        f'<text x="{width - pad}" y="{height - pad + 16}" text-anchor="end">{x_max:.0f}</text>'
        f'<text x="14" y="{height / 2}" transform="rotate(-90 14 {height / 2})" '
        'text-anchor="middle">validation score</text>'
    )
    return (
        f'<svg class="chart" role="img" aria-label="score against spend" viewBox="0 0 {width} '
        f'{height}" width="{width}" height="{height}">{axes}'
        f'<polyline class="best" points="{" ".join(steps)}"/>{points}</svg>'
    )


def _kept(entry: dict[str, Any]) -> str:
    return "kept" if entry.get("accepted") else "dropped"


def candidate_values(entries: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Each candidate's parameter values: the baseline's, with each step's changes applied to
    its parent's (a merge's first parent, with what it took from the second)."""
    values: dict[int, dict[str, Any]] = {}
    for entry in entries:
        cid = entry.get("candidate")
        if not isinstance(cid, int):
            continue
        parent = entry.get("parent")
        given = entry.get("values")
        if parent is None:
            values[cid] = dict(given) if isinstance(given, dict) else {}
        elif isinstance(parent, int) and parent in values:
            changed = entry_changes(entry)
            if changed:
                values[cid] = {**values[parent], **changed}
    return values


def entry_changes(entry: dict[str, Any]) -> dict[str, Any]:
    """What a history entry changed from its parent: its `changes` (several parameters, or
    what a merge took from its second parent), else its one `path` and `value`."""
    changes = entry.get("changes")
    if isinstance(changes, dict):
        return {str(key): value for key, value in changes.items()}
    path = entry.get("path")
    return {path: entry.get("value")} if isinstance(path, str) else {}


def _text_change(old: Any, new: Any, path: str, parent: Any, label: str) -> str:
    if isinstance(old, str) and isinstance(new, str):
        return text_diff(old, new, f"candidate {parent}:{path}", f"{label}:{path}")
    return f"<pre>{esc(path)}: {esc(json.dumps(new, ensure_ascii=False))}</pre>"


def _merge_line(merge: dict[str, Any]) -> str:
    given = merge.get("parents")
    parents = list(given) if isinstance(given, list) else []
    took = merge.get("took")
    first, second = [*parents, None, None][:2]
    pairs = took.items() if isinstance(took, dict) else []
    taken = ", ".join(f"{path} from {source}" for path, source in pairs)
    return (
        f"<p class=merge>merge of {esc(first)} and {esc(second)} (common ancestor "
        f"{esc(merge.get('ancestor'))}): {esc(taken)}</p>"
    )


def _change(entry: dict[str, Any], values: dict[int, dict[str, Any]]) -> str:
    cid, parent = entry.get("candidate"), entry.get("parent")
    changes = entry_changes(entry)
    if not isinstance(parent, int) or (not changes and "merge" not in entry):
        return "<span class=empty>the starting values</span>"
    label = "proposal" if cid is None else f"candidate {cid}"
    parts = [_merge_line(entry["merge"])] if isinstance(entry.get("merge"), dict) else []
    for path, new in changes.items():
        old = values.get(parent, {}).get(path)
        parts.append(_text_change(old, new, path, parent, label))
    return "".join(parts)


def _source(name: str, entry: dict[str, Any]) -> str:
    """A link to the failing examples a proposal came from (none for the baseline, a merge
    or a step that found no failure)."""
    examples = entry.get("examples")
    step = entry.get("step")
    if not isinstance(examples, list) or not examples or not isinstance(step, int):
        return ""
    href = f"/training/step?dir={url(name)[1:]}&step={step}"
    shown = f"{len(examples)} failing example{'' if len(examples) == 1 else 's'}"
    return f'<a href="{esc(href)}">{esc(shown)}</a>'


def _candidates(entries: list[dict[str, Any]], name: str = "") -> str:
    values = candidate_values(entries)
    rows = []
    for entry in entries:
        cid, parent = entry.get("candidate"), entry.get("parent")
        rows.append(
            [
                esc("—" if cid is None else cid),
                esc("" if parent is None else parent),
                esc(_score(entry.get("val_score"))),
                f'<span class="badge {_kept(entry)}">{_kept(entry)}</span>',
                esc(entry.get("reason", "")),
                _change(entry, values),
                _source(name, entry),
            ]
        )
    head = ["candidate", "parent", "score", "kept", "why", "change", "came from"]
    return table(head, rows, empty="")


def step_page(root: Path, name: str, step: str) -> str | None:
    """The failing examples step `step` of fit `name` proposed from: each one's inputs,
    expected and given output, score and feedback, and the calls of the changed module in its
    run as the proposer saw them; secrets the board knows are left out."""
    folder = (root / name).resolve()
    if not folder.is_relative_to(root.resolve()) or not (folder / HISTORY).is_file():
        return None
    entries, _ = read_history(folder)
    found = [
        e for e in entries if str(e.get("step")) == step and isinstance(e.get("examples"), list)
    ]
    if not found:
        return None
    entry = found[0]
    redactor = page_redactor()
    changed = ", ".join(entry_changes(entry)) or str(entry.get("path") or "")
    examples = [e for e in entry["examples"] if isinstance(e, dict)]
    count_text = f"{len(examples)} failing example{'' if len(examples) == 1 else 's'}"
    body = (
        f"<p>Step {esc(step)} proposed a new value for {esc(changed)} from "
        f"{esc(count_text)} (parent candidate {esc(entry.get('parent'))}): "
        f"{esc(entry.get('reason', ''))}. "
        f'<a href="/training/fit?dir={esc(url(name)[1:])}">Back to the fit</a></p>'
    )
    for number_, example in enumerate(examples, 1):
        fields = []
        for key in ("inputs", "expected", "output", "score", "feedback", "error"):
            if example.get(key) not in (None, ""):
                shown = example[key]
                text = shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False)
                fields.append(f"<dt>{esc(key)}</dt><dd>{esc(redactor.redact(text))}</dd>")
        trace = example.get("trace")
        calls = (
            f"<pre class=trace>{esc(redactor.redact(trace))}</pre>"
            if isinstance(trace, str) and trace
            else "<p class=empty>No trace was kept for this example.</p>"
        )
        body += (
            f"<h2>Example {number_}</h2><dl>{''.join(fields)}</dl>"
            f"<h3>Calls of the changed module in its run</h3>{calls}"
        )
    return page(f"Fit {name}, step {step}", "training", body)


def _best_diff(folder: Path, entries: list[dict[str, Any]]) -> str:
    if not (folder / BEST).is_file():
        return f"<p class=empty>No {BEST} in {esc(folder)}.</p>"
    try:
        best = flat_parameters(read_checkpoint(folder / BEST))
    except Exception as exc:  # a damaged or foreign file: named, the rest of the page shown
        return f"<p class=err>{esc(BEST)} cannot be read ({esc(exc)}).</p>"
    given = entries[0].get("values")
    start = {**best, **(given if isinstance(given, dict) else {})}
    changes = parameter_changes(start, best, "start", BEST)
    return diff_block(changes, same="The best checkpoint holds the starting values.")


# --- the frontier over objectives (a fit with several) -------------------------------------


def frontier_section(entries: list[dict[str, Any]]) -> str:
    """The candidates no other beats on every objective, a column per objective, what each
    changed from the start, the kept one marked; "" for a single-metric fit. A candidate whose
    objectives cannot be read (a hand-edited or damaged line) is left out."""
    better = entries[0].get("better") if entries else None
    if not isinstance(better, dict) or not better:
        return ""
    directions = {str(name): way for name, way in better.items() if way in ("higher", "lower")}
    points: dict[int, dict[str, float]] = {}
    kept = None
    for entry in entries:
        cid, measured = entry.get("candidate"), entry.get("objectives")
        if not isinstance(cid, int) or isinstance(cid, bool) or not isinstance(measured, dict):
            continue
        read = {name: number(measured.get(name)) for name in directions}
        if all(value is not None for value in read.values()):
            points[cid] = {name: float(value or 0.0) for name, value in read.items()}
            if entry.get("accepted") is True:
                kept = cid
    values = candidate_values(entries)
    start = values.get(0, {})
    rows = []
    for cid in non_dominated(points, directions):
        changed = {p: v for p, v in values.get(cid, {}).items() if start.get(p) != v}
        shown = "<br>".join(
            f"{esc(path)} = {esc(_clipped(value))}" for path, value in changed.items()
        )
        mark = '<span class="badge kept chosen">kept</span>' if cid == kept else ""
        rows.append(
            [
                esc(cid),
                *(esc(f"{points[cid][name]:.4g}") for name in directions),
                shown or "<span class=empty>the starting values</span>",
                mark,
            ]
        )
    head = ["candidate", *(f"{name} ({way} better)" for name, way in directions.items())]
    return "<h2>Objective frontier</h2>" + table(
        [*head, "changes", ""], rows, empty="No candidate's objectives could be read."
    )


def _clipped(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    shown = repr(text) if isinstance(value, str) else text
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"
