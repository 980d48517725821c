"""Terminal colour: only when the stream is a TTY and `NO_COLOR` is not set (no-color.org)."""

from __future__ import annotations

import os
from typing import TextIO

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


class Style:
    def __init__(self, stream: TextIO) -> None:
        isatty = getattr(stream, "isatty", None)
        self.enabled = bool(isatty and isatty()) and "NO_COLOR" not in os.environ

    def __call__(self, text: str, *names: str) -> str:
        if not self.enabled or not names:
            return text
        codes = ";".join(_CODES[name] for name in names)
        return f"\033[{codes}m{text}\033[0m"
