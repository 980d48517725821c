"""The Conversations pages (a session store: list, read, delete) and the Checkpoints page (any two
checkpoint files under `--checkpoints`, side by side and as a diff)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..checkpoint.read import read_checkpoint
from ..errors import InvalidArgument
from .html import diff_block, esc, page, table, url
from .parameter_diff import flat_parameters, parameter_changes

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
        turns = await store.load_turns(session_id)
        listed.append(
            [
                f'<a href="{url("conversations", session_id)}">{esc(session_id)}</a>',
                str(len(turns)),
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


async def conversation_page(store: Any, session_id: str, csrf: str) -> str | None:
    turns = await store.load_turns(session_id)
    if not turns:
        return None
    out = []
    for turn in turns:
        messages = _turn_messages(turn.payload)
        shown = "".join(
            f'<div class="msg {esc(m.get("role"))}"><span class=role>{esc(m.get("role"))}</span>'
            f"<pre>{esc(_content(m))}</pre></div>"
            for m in messages
        )
        out.append(f"<section class=turn><h2>Turn {turn.seq}</h2>{shown}</section>")
    body = "".join(out) + _delete_form(session_id, csrf)
    return page(f"Conversation {session_id}", "conversations", body)


def _turn_messages(payload: str) -> list[dict[str, Any]]:
    """The messages a stored turn appended to its memories (see `RecordedMemory`)."""
    try:
        data = json.loads(payload)
    except ValueError:
        return [{"role": "?", "content": payload}]
    messages = []
    for change in data.get("changes", []) if isinstance(data, dict) else []:
        if isinstance(change, list) and len(change) == 2 and isinstance(change[1], list):
            action = change[1]
            if action and action[0] == "extend" and len(action) == 2:
                messages += [m for m in action[1] if isinstance(m, dict)]
            elif action and action[0] == "replace_last" and len(action) == 2:
                messages.append(action[1])
    return messages


def _content(message: dict[str, Any]) -> str:
    text = str(message.get("content") or "")
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
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
