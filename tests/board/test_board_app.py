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
