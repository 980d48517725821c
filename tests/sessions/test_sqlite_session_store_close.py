"""Closing an SQLite store (or the SQLite response cache, which opens its file the same way)
while other threads run statements on it: each connection is closed once its statement is done,
the threads go on with new connections, and the interpreter never crashes. Run in a child
process, so a crash fails the test instead of ending the test run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from locations import SUPPORT

HANG_GUARD = 600.0  # seconds: only so a broken run fails instead of hanging the suite


@pytest.mark.parametrize("kind", ["store", "cache"])
def test_closing_while_many_threads_use_it_never_crashes(kind: str, tmp_path: Path) -> None:
    threads, rounds = 8, 150
    command = [sys.executable, str(SUPPORT / "sqlite_close_under_load.py"), kind]
    command += [str(tmp_path / "app.db"), "--threads", str(threads), "--rounds", str(rounds)]
    child = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
    )
    assert child.returncode == 0, (child.returncode, child.stderr[-3000:])
    word, operations, closes = child.stdout.split()
    assert word == "ok"
    assert int(operations) == threads * rounds * 3  # every statement of every thread ran
    assert int(closes) > threads  # the file was closed again and again while they ran
