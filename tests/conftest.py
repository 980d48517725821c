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


# --- real database servers (see tests/support/servers.py): one of each per test run ----------


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Any]:
    from servers import start_postgres

    server = start_postgres()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Any]:
    from servers import start_redis

    server = start_redis()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: Any) -> str:
    """A new, empty database on the test run's PostgreSQL server."""
    return postgres_server.new_database()  # type: ignore[no-any-return]


@pytest.fixture
def redis_url(redis_server: Any) -> str:
    """The test run's Redis server, emptied for this test."""
    client = redis_server.client()
    try:
        client.flushall()
    finally:
        client.close()
    return redis_server.url  # type: ignore[no-any-return]


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    """One session store kind per run of the test (tests/support/store_backends.py), on a fresh
    file or database."""
    from store_backends import Backend

    kind = request.param
    if kind == "sqlite":
        return Backend(kind, str(tmp_path / "sessions.db"))
    if kind == "postgres":
        return Backend(kind, request.getfixturevalue("postgres_url"))
    return Backend(kind, request.getfixturevalue("redis_url"))
