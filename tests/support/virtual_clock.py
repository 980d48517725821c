"""`VirtualClock`: a clock the tests move by hand (see the `virtual_clock` fixture in conftest).

Its own module, not conftest: test files import it by name, and several conftest.py files
(tests/ and each plugin's tests/) would make `from conftest import ...` ambiguous in a
whole-repo run.
"""

from __future__ import annotations

import asyncio


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
