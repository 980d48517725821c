"""`bounded`: run a call that might hang (a read of a FIFO, a save onto one) in a daemon thread,
so a regression fails the test after a generous bound instead of hanging the test run."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

BOUND = 60.0  # seconds; generous: every bounded call in the tests takes milliseconds


def bounded(fn: Callable[[], Any], on_timeout: Callable[[], None] = lambda: None) -> Any:
    """Run `fn` in a daemon thread; its result or exception, or a test failure after BOUND s
    (a daemon thread cannot keep the test run from exiting if the regression hangs)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # handed to the test below
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    if thread.is_alive():
        on_timeout()
        pytest.fail(f"still running after {BOUND} s: it hangs")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
