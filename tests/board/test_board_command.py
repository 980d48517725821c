"""`promptimus board`'s options are checked before anything is served: a missing folder, a
folder given as the board file, a port out of range each end with a message and status 2."""

from __future__ import annotations

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
