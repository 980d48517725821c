"""DBOS's own log lines are quiet unless asked for: warnings and errors pass, its INFO start-up
lines only with PROMPTIMUS_DBOS_LOG_LEVEL or `show_dbos_logs`."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from promptimus.durable import show_dbos_logs
from promptimus.durable.logs import LOG_LEVEL_ENV


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def dbos_records(monkeypatch: pytest.MonkeyPatch) -> Iterator[Collect]:
    monkeypatch.delenv(LOG_LEVEL_ENV, raising=False)
    logger = logging.getLogger("dbos")
    handler, level = Collect(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        show_dbos_logs(None)


def test_info_is_dropped_and_warnings_pass(dbos_records: Collect) -> None:
    logger = logging.getLogger("dbos")
    logger.info("DBOS launched!")
    logger.warning("a workflow could not be recovered")
    logger.error("the system database is gone")
    assert dbos_records.messages == [
        "a workflow could not be recovered",
        "the system database is gone",
    ]


def test_the_environment_asks_for_more(
    dbos_records: Collect, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LOG_LEVEL_ENV, "info")
    logging.getLogger("dbos").info("DBOS launched!")
    logging.getLogger("dbos").debug("a detail")
    assert dbos_records.messages == ["DBOS launched!"]
    monkeypatch.setenv(LOG_LEVEL_ENV, "not-a-level")  # a typo falls back to the default
    logging.getLogger("dbos").info("hidden")
    assert dbos_records.messages == ["DBOS launched!"]


def test_show_dbos_logs_in_code(dbos_records: Collect) -> None:
    show_dbos_logs("DEBUG")
    logging.getLogger("dbos").debug("a detail")
    show_dbos_logs(None)
    logging.getLogger("dbos").info("hidden again")
    assert dbos_records.messages == ["a detail"]


LAUNCH = """
from dbos import DBOS
import promptimus.durable
DBOS(config={"name": "quiet", "system_database_url": "sqlite:///quiet.sqlite"})
DBOS.launch()
DBOS.destroy()
print("done")
"""


def test_a_real_launch_prints_nothing_of_dbos(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", LAUNCH],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != LOG_LEVEL_ENV},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "done"
    assert (tmp_path / "quiet.sqlite").exists()  # DBOS did start: its migrations ran
    assert "INFO" not in result.stderr and "DBOS launched" not in result.stderr, result.stderr
