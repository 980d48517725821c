"""Shared fixtures for the test suite.

`virtual_clock` replaces wall-clock time where a test checks waits (rate limits, backoff): the
code under test reads the clock and asks for sleeps, the test checks what it asked for. Nothing
then depends on how busy the machine is, so the suite cannot flake under load.
"""

from __future__ import annotations

import pytest
from virtual_clock import VirtualClock


@pytest.fixture
def virtual_clock() -> VirtualClock:
    return VirtualClock()
