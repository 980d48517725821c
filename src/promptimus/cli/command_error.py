"""The error a command reports as one line on stderr (never a traceback)."""

from __future__ import annotations

from ..errors import PromptimusError


class CommandLineError(PromptimusError):
    """A command-line input (file, object, option) cannot be used; the message says why."""
