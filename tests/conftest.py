"""Shared fixtures for the test suite.

`virtual_clock` replaces wall-clock time where a test checks waits (rate limits, backoff): the
code under test reads the clock and asks for sleeps, the test checks what it asked for. Nothing
then depends on how busy the machine is, so the suite cannot flake under load.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from virtual_clock import VirtualClock


@pytest.fixture
def virtual_clock() -> VirtualClock:
    return VirtualClock()


@pytest.fixture
def exporter() -> Iterator[Any]:
    """Spans of this test, in the OpenTelemetry SDK's in-memory exporter: promptimus is
    instrumented with a provider of its own for the test, then shut down."""
    pytest.importorskip("opentelemetry.sdk", reason="install the dev dependency group")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from promptimus.tracing import instrument

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with instrument(provider):
        yield memory
    provider.shutdown()
