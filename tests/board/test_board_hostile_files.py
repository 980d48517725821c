"""The board reads files written elsewhere: every value it shows from a runs file or a fit's
history.jsonl is escaped or formatted (a `<meta refresh>` in a token count must stay text), and a
value of the wrong type or a damaged line shows as what it is instead of taking the page down."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from board_support import chromium_page
from starlette.testclient import TestClient

from promptimus.board.app import BoardConfig, build_app
from promptimus.board.store import SCHEMA

BASE = "http://127.0.0.1:8321"
META = '<meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/">'


def client(config: BoardConfig) -> TestClient:
    return TestClient(build_app(config), base_url=BASE, follow_redirects=False)


def hostile_runs(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute(
        "INSERT INTO runs (id, name, request, status, started, ended, tokens, cost) "
        "VALUES ('r1', 'root', 'hello', 'ok', 1.0, 2.0, ?, ?)",
        (META, META),
    )
    db.execute(
        "INSERT INTO spans (id, run_id, name, kind, started, ended, status, input, output, "
        "model, prompt_tokens, completion_tokens, cost) "
        "VALUES ('s1', 'r1', 'root.llm', 'LLM', 1.0, ?, 'ok', '[]', '{}', 'm', ?, ?, NULL)",
        (META, META, META),
    )
    db.commit()
    db.close()


def hostile_fit(root: Path) -> None:
    folder = root / "fit"
    folder.mkdir(parents=True)
    lines: list[Any] = [
        {"candidate": 0, "parent": None, "val_score": 0.5, "accepted": True, "tokens": 10},
        {"candidate": META, "parent": 0, "val_score": 0.7, "accepted": True, "tokens": META},
    ]
    (folder / "history.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def test_values_read_from_a_runs_file_are_escaped(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    hostile_runs(path)
    with client(BoardConfig(path)) as board:
        for address in ("/runs", "/runs/r1"):
            answer = board.get(address)
            assert answer.status_code == 200, address
            assert "<meta http-equiv" not in answer.text, address
            assert "&lt;meta http-equiv" in answer.text, address


def test_values_read_from_a_fit_history_are_escaped(tmp_path: Path) -> None:
    hostile_fit(tmp_path / "fits")
    with client(BoardConfig(tmp_path / "runs.sqlite", fits=tmp_path / "fits")) as board:
        for address in ("/training", "/training/fit?dir=fit"):
            answer = board.get(address)
            assert answer.status_code == 200, address
            assert "<meta http-equiv" not in answer.text, address


def test_a_meta_refresh_in_a_file_does_not_move_the_browser(tmp_path: Path) -> None:
    from board_support import board_process

    path = tmp_path / "runs.sqlite"
    hostile_runs(path)
    hostile_fit(tmp_path / "fits")
    options = ["--fits", str(tmp_path / "fits")]
    with (
        board_process(tmp_path / "board.log", str(path), *options) as board,
        chromium_page() as (page, _console),
    ):
        if True:
            for address in ("/runs", "/runs/r1", "/training", "/training/fit?dir=fit"):
                page.goto(board.url + address)
                page.wait_for_timeout(300)
                assert page.url == board.url + address
                assert META in page.content().replace("&lt;", "<").replace("&gt;", ">")


def test_a_non_ascii_token_or_csrf_value_is_refused_not_a_crash(tmp_path: Path) -> None:
    config = BoardConfig(tmp_path / "runs.sqlite", host="127.0.0.1", token="t0ken-value")
    with client(config) as board:
        assert board.get("/runs?token=%C3%A9t%C3%A9").status_code == 401
        bearer = {"authorization": "Bearer été".encode()}
        assert board.get("/runs", headers=bearer).status_code == 401  # type: ignore[dict-item]
        board.cookies.set("board_token", "%C3%A9t%C3%A9")
        assert board.get("/runs").status_code == 401
    config = BoardConfig(tmp_path / "runs.sqlite")
    with client(config) as board:
        answer = board.post(
            "/conversations/x/delete", data={"csrf": "été"}, headers={"origin": BASE}
        )
        assert answer.status_code == 403


def test_a_board_on_every_address_answers_the_hosts_clients_use(tmp_path: Path) -> None:
    config = BoardConfig(tmp_path / "runs.sqlite", host="0.0.0.0", token="t0ken-value")
    with client(config) as board:
        bearer = {"authorization": "Bearer t0ken-value"}
        for host in ("127.0.0.1:8321", "localhost:8321", "192.168.1.20:8321", "board.lan:8321"):
            answer = board.get("/runs", headers={**bearer, "host": host})
            assert answer.status_code == 200, host
        assert board.get("/runs", headers={"host": "board.lan:8321"}).status_code == 401
