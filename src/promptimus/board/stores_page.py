"""The Conversations pages (a session store: list, read, delete) and the Checkpoints page (any two
checkpoint files under `--checkpoints`, side by side and as a diff)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..checkpoint.read import read_checkpoint
from ..errors import InvalidArgument, PromptimusError
from .html import diff_block, esc, page, table, url
from .parameter_diff import flat_parameters, parameter_changes
from .redaction import BoardEncoder, page_redactor

__all__ = ["checkpoints_page", "conversation_page", "conversations_page", "open_store"]


def open_store(address: str) -> Any:
    """The session store `address` names: a postgresql:// or redis:// URL, else a SQLite file."""
    if address.startswith(("postgresql://", "postgres://")):
        from ..sessions.postgres import PostgresSessionStore

        return PostgresSessionStore(address)
    if address.startswith(("redis://", "rediss://", "unix://")):
        from ..sessions.redis import RedisSessionStore

        return RedisSessionStore(address)
    from ..sessions.sqlite import SQLiteSessionStore

    path = Path(address.removeprefix("sqlite:///"))
    if not path.is_file():
        raise InvalidArgument(
            f"--sessions {address!r}: no such SQLite file; give the file a SQLiteSessionStore "
            "writes, or a postgresql:// or redis:// URL."
        )
    return SQLiteSessionStore(path)


async def conversations_page(store: Any, csrf: str) -> str:
    if store is None:
        body = "<p class=empty>Start the board with --sessions URL.</p>"
        return page("Conversations", "conversations", body)
    ids = await store.list_sessions()
    listed = []
    for session_id in ids:
        try:
            turns = str(len(await store.load_turns(session_id)))
        except PromptimusError as exc:  # its turns cannot be read: named, the others listed
            turns = f"<span class=err>{esc(exc)}</span>"
        listed.append(
            [
                f'<a href="{url("conversations", session_id)}">{esc(session_id)}</a>',
                turns,
                _delete_form(session_id, csrf),
            ]
        )
    body = table(["conversation", "turns", ""], listed, empty="No conversation in this store.")
    return page("Conversations", "conversations", body)


def _delete_form(session_id: str, csrf: str) -> str:
    return (
        f'<form method=post action="{url("conversations", session_id, "delete")}" '
        'data-confirm="Delete this conversation and all of its turns?">'
        f'<input type=hidden name=csrf value="{esc(csrf)}"><button class=danger>Delete</button>'
        "</form>"
    )


async def conversation_page(store: Any, session_id: str, csrf: str, runs: str = "") -> str | None:
    """A stored conversation turn by turn; `runs`: its recorded runs, as HTML."""
    turns = await store.load_turns(session_id)
    if not turns:
        return None
    redactor = page_redactor()  # what `record()` leaves out of a run, left out here too
    out = []
    for turn in turns:
        try:
            shown = "".join(_message(m, redactor) for m in _turn_messages(turn.payload))
        except Exception as exc:  # a turn this page cannot read: named, the others shown
            shown = (
                f"<p class=err>This turn cannot be shown ({esc(redactor.redact(str(exc)))}).</p>"
            )
        out.append(f"<section class=turn><h2>Turn {esc(turn.seq)}</h2>{shown}</section>")
    body = "".join(out) + runs + _delete_form(session_id, csrf)
    return page(f"Conversation {session_id}", "conversations", body)


def _message(message: dict[str, Any], redactor: BoardEncoder) -> str:
    role = esc(message.get("role"))
    text = redactor.redact(_content(message))
    return f'<div class="msg {role}"><span class=role>{role}</span><pre>{esc(text)}</pre></div>'


class MalformedTurn(ValueError):
    """A stored turn that is not what `RecordedMemory` writes."""


def _turn_messages(payload: str) -> list[dict[str, Any]]:
    """The messages a stored turn appended to its memories (see `RecordedMemory`);
    `MalformedTurn` for a turn of another shape."""
    try:
        data = json.loads(payload)
    except (ValueError, TypeError, RecursionError):
        return [{"role": "?", "content": payload}]
    if not isinstance(data, dict) or not isinstance(data.get("changes", []), list):
        raise MalformedTurn("it holds no list of changes")
    messages: list[Any] = []
    for change in data.get("changes", []):
        if isinstance(change, list) and len(change) == 2 and isinstance(change[1], list):
            action = change[1]
            if action and action[0] == "extend" and len(action) == 2:
                if not isinstance(action[1], list):
                    raise MalformedTurn("an extend that holds no list of messages")
                messages += action[1]
            elif action and action[0] == "replace_last" and len(action) == 2:
                messages.append(action[1])
    for message in messages:
        if not isinstance(message, dict):
            raise MalformedTurn(f"a message that is not an object: {str(message)[:80]!r}")
    return messages


def _content(message: dict[str, Any]) -> str:
    text = str(message.get("content") or "")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise MalformedTurn(f"tool_calls is not a list: {str(calls)[:80]!r}")
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise MalformedTurn(f"a tool call that names no function: {str(call)[:80]!r}")
        text += f"\n→ {function.get('name')}({function.get('arguments')})"
    return text.strip()


def checkpoint_files(root: Path | None) -> list[str]:
    if root is None or not root.is_dir():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.toml") if p.is_file())


def checkpoints_page(root: Path | None, a: str, b: str) -> str:
    if root is None:
        body = "<p class=empty>Start the board with --checkpoints DIR.</p>"
        return page("Checkpoints", "checkpoints", body)
    files = checkpoint_files(root)

    def select(name: str, chosen: str) -> str:
        options = "".join(
            f'<option value="{esc(f)}"{" selected" if f == chosen else ""}>{esc(f)}</option>'
            for f in files
        )
        return f"<select name={name}>{options}</select>"

    body = (
        '<form class=filter method=get action="/checkpoints">'
        f"{select('a', a)} {select('b', b)}<button>Compare</button></form>"
    )
    if a in files and b in files:
        texts = [(root / name).read_text(encoding="utf-8") for name in (a, b)]
        flat = [flat_parameters(read_checkpoint(root / name)) for name in (a, b)]
        body += "<h2>Diff</h2>" + diff_block(
            parameter_changes(flat[0], flat[1], a, b), same=f"{a} and {b} hold the same values."
        )
        body += (
            "<div class=side>"
            f"<div><h2>{esc(a)}</h2><pre>{esc(texts[0])}</pre></div>"
            f"<div><h2>{esc(b)}</h2><pre>{esc(texts[1])}</pre></div></div>"
        )
    elif not files:
        body += f"<p class=empty>No .toml checkpoint under {esc(root)}.</p>"
    return page("Checkpoints", "checkpoints", body)
