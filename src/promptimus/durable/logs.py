"""DBOS's own log lines: quiet unless asked for.

DBOS logs a dozen INFO lines when it starts (one per schema migration, "DBOS launched!", a link
to its web console) and more when it stops; next to an application's own output they read as
noise. Importing `promptimus.durable` puts a filter on DBOS's logger that lets through its
warnings and errors only. Ask for more with the environment variable
``PROMPTIMUS_DBOS_LOG_LEVEL`` (``INFO``, ``DEBUG``...), read when each record is logged, or with
`show_dbos_logs`.
"""

from __future__ import annotations

import logging
import os

__all__ = ["LOG_LEVEL_ENV", "quiet_dbos_logs", "show_dbos_logs"]

LOG_LEVEL_ENV = "PROMPTIMUS_DBOS_LOG_LEVEL"
_DEFAULT = logging.WARNING


class _DBOSLogFilter(logging.Filter):
    """Passes a DBOS record at or above the level asked for (WARNING unless told)."""

    def __init__(self) -> None:
        super().__init__()
        self.level: int | None = None  # set by `show_dbos_logs`; None: the environment decides

    def threshold(self) -> int:
        if self.level is not None:
            return self.level
        asked = os.environ.get(LOG_LEVEL_ENV, "").strip().upper()
        if asked.isdigit():
            return int(asked)
        level = logging.getLevelName(asked) if asked else _DEFAULT
        return level if isinstance(level, int) else _DEFAULT

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.threshold()


_FILTER = _DBOSLogFilter()


def quiet_dbos_logs() -> None:
    """Put the filter on DBOS's logger (once; calling again changes nothing)."""
    logger = logging.getLogger("dbos")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def show_dbos_logs(level: int | str | None = logging.INFO) -> None:
    """Let DBOS's records from ``level`` up through (``None``: back to the environment's choice,
    WARNING by default)."""
    if isinstance(level, str):
        named = logging.getLevelName(level.upper())
        level = named if isinstance(named, int) else _DEFAULT
    _FILTER.level = level
    quiet_dbos_logs()
