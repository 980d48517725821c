"""`one_line(exc)`: an exception as one line, for an error message or a report row."""

from __future__ import annotations

__all__ = ["one_line"]


def one_line(exc: BaseException) -> str:
    """``"TypeName: message"`` (the type alone when the message is empty). An exception group
    (what a task group raises) is described by its first exception, which says what failed."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
