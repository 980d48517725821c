"""`promptimus board`'s options are checked before anything is served: a missing folder, a
folder given as the board file, a port out of range each end with a message and status 2."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from promptimus.cli import main


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--fits", "no-such-folder"], "--fits no-such-folder: no such folder"),
        (["--checkpoints", "no-such-folder"], "--checkpoints no-such-folder: no such folder"),
        (["--port", "70000"], "--port must be 1-65535"),
    ],
)
def test_bad_options_are_refused_with_a_message(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    options: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["board", "runs.sqlite", *options]) == 2
    assert message in capsys.readouterr().err


def test_a_folder_is_not_a_board_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["board", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--sessions", "no-such.db"], "--sessions no-such.db: no such SQLite file"),
        (["--dbos", "no-such-dbos.sqlite"], "--dbos no-such-dbos.sqlite: no such file"),
    ],
)
def test_a_store_or_database_that_is_not_there_is_named_not_created(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    options: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["board", "runs.sqlite", *options]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing made


@pytest.mark.parametrize(
    ("missing", "options", "install"),
    [
        ("dbos", ["--dbos", "postgresql://u@127.0.0.1:1/db"], 'pip install "promptimus[dbos]"'),
        ("redis", ["--sessions", "redis://127.0.0.1:1/0"], 'pip install "promptimus[redis]"'),
        ("psycopg", ["--sessions", "postgresql://u@127.0.0.1:1/db"], "promptimus[postgres]"),
        ("python_multipart", [], 'pip install "promptimus[board]"'),
    ],
)
def test_an_option_whose_library_is_not_installed_says_what_to_install(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    missing: str,
    options: list[str],
    install: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, missing, None)  # as if it were not installed
    assert main(["board", "runs.sqlite", *options]) == 2
    err = capsys.readouterr().err
    assert install in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
