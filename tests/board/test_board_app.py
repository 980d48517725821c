"""The board's guards, over HTTP (Starlette's test client): a foreign Host header is refused, a
non-local board needs its token, an action needs the page's CSRF token and no foreign Origin,
values are shown escaped, and a board whose file does not exist yet starts empty."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promptimus import Module
from promptimus.board import record
from promptimus.board.app import BoardConfig, build_app
from promptimus.sessions import SQLiteSessionStore

BASE = "http://127.0.0.1:8321"


def client(config: BoardConfig, base: str = BASE) -> TestClient:
    return TestClient(build_app(config), base_url=base, follow_redirects=False)


@pytest.fixture
def store_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "app.db"
    payload = {"v": 1, "changes": [["root", ["extend", [{"role": "user", "content": "hi"}]]]]}

    async def write() -> None:
        store = SQLiteSessionStore(path)
        await store.append_turn("alice", json.dumps(payload))
        await store.aclose()

    asyncio.run(write())
    yield path


def sessions(path: Path) -> list[str]:
    async def read() -> list[str]:
        store = SQLiteSessionStore(path)
        try:
            return await store.list_sessions()
        finally:
            await store.aclose()

    return asyncio.run(read())


def test_a_request_for_another_host_is_refused(tmp_path: Path) -> None:
    with client(BoardConfig(tmp_path / "runs.sqlite")) as board:
        assert board.get("/runs").status_code == 200
        assert board.get("/runs", headers={"host": "localhost:8321"}).status_code == 200
        for host in ("evil.example:8321", "127.0.0.1:9999", "attacker.test"):
            answer = board.get("/runs", headers={"host": host})
            assert answer.status_code == 403, host


def test_a_board_whose_file_does_not_exist_yet_starts_empty(tmp_path: Path) -> None:
    with client(BoardConfig(tmp_path / "not-yet.sqlite")) as board:
        page = board.get("/runs").text
    assert "No runs recorded" in page
    assert not (tmp_path / "not-yet.sqlite").exists()  # the board never creates it


def test_delete_needs_the_csrf_token_and_the_boards_own_origin(
    tmp_path: Path, store_file: Path
) -> None:
    config = BoardConfig(tmp_path / "runs.sqlite", sessions=str(store_file))
    with client(config) as board:
        page = board.get("/conversations").text
        csrf = re.search(r'name=csrf value="([^"]+)"', page)
        assert csrf is not None and csrf.group(1) == config.csrf
        forged = [
            ({}, {}),  # no token
            ({"csrf": "guessed"}, {}),
            ({"csrf": config.csrf}, {"origin": "http://evil.example"}),
        ]
        for form, headers in forged:
            answer = board.post("/conversations/alice/delete", data=form, headers=headers)
            assert answer.status_code == 403
        assert sessions(store_file) == ["alice"]
        answer = board.post(
            "/conversations/alice/delete", data={"csrf": config.csrf}, headers={"origin": BASE}
        )
        assert answer.status_code == 303
    assert sessions(store_file) == []


def test_a_non_local_board_needs_its_token(tmp_path: Path) -> None:
    config = BoardConfig(tmp_path / "runs.sqlite", host="0.0.0.0", token="t0ken-value")
    with client(config, "http://0.0.0.0:8321") as board:
        assert board.get("/runs").status_code == 401
        assert board.get("/runs", headers={"authorization": "Bearer wrong"}).status_code == 401
        answer = board.get("/runs?token=t0ken-value&q=x")
        assert answer.status_code == 303 and answer.headers["location"] == "/runs?q=x"
        assert "samesite=strict" in answer.headers["set-cookie"].lower()
        assert board.get("/runs").status_code == 200  # the cookie it set
    with client(config, "http://0.0.0.0:8321") as fresh:
        answer = fresh.get("/runs", headers={"authorization": "Bearer t0ken-value"})
        assert answer.status_code == 200


class Echo(Module):
    async def forward(self, text: str) -> str:
        return text


def test_values_are_shown_as_text_never_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with record(path):
        asyncio.run(Echo()("<script>alert('x')</script>"))
    with client(BoardConfig(path)) as board:
        listed = board.get("/runs")
        run_id = re.search(r'href="/runs/([0-9a-f]+)"', listed.text)
        assert run_id is not None
        page = board.get(f"/runs/{run_id.group(1)}")
    for answer in (listed, page):
        assert "<script>alert" not in answer.text
        assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in answer.text
        assert "script-src 'self'" in answer.headers["content-security-policy"]


def write_turns(path: Path, turns: list[tuple[str, str]]) -> None:
    async def write() -> None:
        store = SQLiteSessionStore(path)
        for session_id, payload in turns:
            await store.append_turn(session_id, payload)
        await store.aclose()

    asyncio.run(write())


def turn(*messages: object) -> str:
    return json.dumps({"v": 1, "changes": [["root", ["extend", list(messages)]]]})


def test_a_conversation_whose_id_holds_a_slash_opens_and_deletes(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    write_turns(path, [("team/alice", turn({"role": "user", "content": "hi from a team"}))])
    config = BoardConfig(tmp_path / "runs.sqlite", sessions=str(path))
    with client(config) as board:
        listed = board.get("/conversations").text
        link = re.search(r'href="(/conversations/team[^"]+)"', listed)
        assert link is not None
        answer = board.get(link.group(1))
        assert answer.status_code == 200 and "hi from a team" in answer.text
        action = re.search(r'action="(/conversations/team[^"]+/delete)"', answer.text)
        assert action is not None
        done = board.post(action.group(1), data={"csrf": config.csrf}, headers={"origin": BASE})
        assert done.status_code == 303
    assert sessions(path) == []


def test_a_malformed_stored_turn_is_named_and_the_others_shown(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    bad = [
        json.dumps({"v": 1, "changes": [["root", ["replace_last", "not a message"]]]}),
        json.dumps(
            {"v": 1, "changes": [["root", ["extend", [{"role": "user", "tool_calls": 5}]]]]}
        ),
        json.dumps([1, 2, 3]),
    ]
    write_turns(
        path,
        [("bob", turn({"role": "user", "content": "first words"}))]
        + [("bob", text) for text in bad]
        + [("bob", turn({"role": "assistant", "content": "last words"}))],
    )
    with client(BoardConfig(tmp_path / "runs.sqlite", sessions=str(path))) as board:
        assert board.get("/conversations").status_code == 200
        answer = board.get("/conversations/bob")
    assert answer.status_code == 200
    assert "first words" in answer.text and "last words" in answer.text
    assert answer.text.count("cannot be shown") == 3


def test_the_conversations_page_redacts_what_the_runs_page_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_DB_PASSWORD", "hunter2-very-secret")
    path = tmp_path / "app.db"
    said = "my db password is hunter2-very-secret, see postgresql://shop:p4ssw0rd@db/shop"
    write_turns(path, [("carol", turn({"role": "user", "content": said}))])
    runs = tmp_path / "runs.sqlite"
    with record(runs):
        asyncio.run(Echo()(said))
    with client(BoardConfig(runs, sessions=str(path))) as board:
        shown = board.get("/conversations/carol").text
        run_id = re.search(r'href="/runs/([0-9a-f]+)"', board.get("/runs").text)
        assert run_id is not None
        run = board.get(f"/runs/{run_id.group(1)}").text
    for page in (shown, run):
        assert "hunter2-very-secret" not in page and "p4ssw0rd" not in page
        assert "[REDACTED]" in page
    assert "my db password is" in shown


def test_a_damaged_runs_file_or_history_line_shows_what_can_be_read(tmp_path: Path) -> None:
    runs = tmp_path / "runs.sqlite"
    runs.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)
    fits = tmp_path / "fits" / "one"
    fits.mkdir(parents=True)
    lines = [
        json.dumps({"candidate": 0, "parent": None, "val_score": 0.5, "accepted": True}),
        "[1, 2]",
        '{"candidate": 1, "parent": 0, "val_score": "high", "accepted": true, "tokens": "x"}',
        "{cut by a cra",
        json.dumps({"candidate": 2, "parent": 0, "val_score": 0.75, "accepted": True}),
    ]
    (fits / "history.jsonl").write_text("\n".join(lines) + "\n")
    with client(BoardConfig(runs, fits=tmp_path / "fits")) as board:
        listed = board.get("/runs")
        one = board.get("/runs/abc")
        training = board.get("/training")
        fit = board.get("/training/fit?dir=one")
    assert listed.status_code == 200 and "cannot be" in listed.text
    assert one.status_code == 200 and "cannot be" in one.text
    assert training.status_code == 200 and "0.750" in training.text
    assert fit.status_code == 200
    assert "line 2 of history.jsonl is not a JSON object" in fit.text
    assert "line 4 of history.jsonl is not JSON" in fit.text
    assert fit.text.count("<circle") == 2  # the two scored candidates
