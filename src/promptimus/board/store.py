"""The board's SQLite file: its tables, written by `record` and read by the board's pages.

A run is one outermost module call (an agent's `run`, a module called with nothing around it).
Each module call, model call and tool call inside it is a span, with its parent span:

- `runs`: id, request, status ("running", "ok", "error", "blocked" by a guardrail,
  "needs_approval"), started and ended
  (Unix seconds), tokens, cost, the error text, the answer; for a run that paused for
  approval the id of its paused state (`paused_state`), and for a run that resumed one, that
  id (`resumes`): the link between a paused run and its continuation; the stored
  conversation (`pm.Session` name) the run was a turn of (`session`).
- `spans`: id, run, parent, name (the module path; a model call is `<path>.llm`), kind
  ("AGENT", "CHAIN", "TOOL", "LLM", ...), start and end, status, error, input and output
  (JSON text), the model, token counts, cost, and for a model call its messages and reply.
- `tool_progress`: what a tool reported while it ran (`ctx.progress(...)`): the run, the tool
  call's id, the tool's name, the message, the fraction done (None when the tool cannot tell)
  and when (Unix seconds); written while the run runs, the latest ones of each run kept (a
  file written before this table existed gains it when it is next recorded into).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA", "create", "open_for_reading", "read", "rows"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    request TEXT NOT NULL DEFAULT '',
    status TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL,
    error TEXT,
    answer TEXT,
    paused_state TEXT,
    resumes TEXT,
    session TEXT
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started);
CREATE TABLE IF NOT EXISTS spans (
    id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    parent_id TEXT,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    status TEXT NOT NULL,
    error TEXT,
    input TEXT,
    output TEXT,
    model TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    cost REAL
);
CREATE INDEX IF NOT EXISTS spans_run ON spans (run_id, started);
CREATE TABLE IF NOT EXISTS tool_progress (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    message TEXT NOT NULL,
    fraction REAL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tool_progress_run ON tool_progress (run_id, id);
"""


# columns added since the first files were written: (table, column, type)
_ADDED = (
    ("runs", "paused_state", "TEXT"),
    ("runs", "resumes", "TEXT"),
    ("runs", "session", "TEXT"),
)


def create(db: sqlite3.Connection) -> None:
    """Make the tables, and add to a file written by an earlier version the columns it lacks."""
    db.executescript(SCHEMA)
    for table, column, kind in _ADDED:
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in present:
            try:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
            except sqlite3.OperationalError as exc:  # another process added it just now
                if "duplicate column" not in str(exc):
                    raise


def open_for_reading(path: Path) -> sqlite3.Connection | None:
    """A read-only connection to the board file, None while it does not exist yet."""
    if not path.is_file():
        return None
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
    db.row_factory = sqlite3.Row
    return db


def rows(path: Path, query: str, parameters: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """The rows of `query` on the board file as dicts ([] while the file or its tables do not
    exist yet: a board started before the first run shows an empty page)."""
    return read(path, query, parameters)[0]


def read(
    path: Path, query: str, parameters: tuple[Any, ...] = ()
) -> tuple[list[dict[str, Any]], str | None]:
    """The rows of `query` that can be read, and what could not be, if anything: a damaged
    file (cut short, overwritten, not SQLite) still shows the rows before the damage."""
    found: list[dict[str, Any]] = []
    try:
        db = open_for_reading(path)
    except sqlite3.Error as exc:
        return found, f"{path} cannot be opened ({exc})"
    if db is None:
        return found, None
    try:
        for row in db.execute(query, parameters):
            found.append(dict(row))
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc) and not found:
            return found, None
        return found, f"{path} cannot be read past row {len(found)} ({exc})"
    except sqlite3.Error as exc:
        return found, f"{path} cannot be read past row {len(found)} ({exc})"
    finally:
        db.close()
    return found, None
