"""Shared fixtures for the test suite.

`virtual_clock` replaces wall-clock time where a test checks waits (rate limits, backoff): the
code under test reads the clock and asks for sleeps, the test checks what it asked for. Nothing
then depends on how busy the machine is, so the suite cannot flake under load.
"""

from __future__ import annotations

import asyncio

import pytest


class VirtualClock:
    """A monotonic clock that moves only when someone sleeps on it.

    Pass ``clock`` as the time source and ``clock.sleep`` as the sleep function: each sleep is
    recorded in ``sleeps`` and advances ``now`` at once by the time asked for, then yields to the
    event loop so other tasks run as they would during a real wait.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(seconds, 0.0)
        await asyncio.sleep(0)


@pytest.fixture
def virtual_clock() -> VirtualClock:
    return VirtualClock()
