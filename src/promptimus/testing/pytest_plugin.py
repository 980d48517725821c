"""Pytest fixtures for the fake OpenAI server.

- ``fake_openai``: a started `FakeOpenAIServer`, one per test.
- ``fake_openai_env``: the same server, with ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` pointing at
  it for the duration of the test, so code that builds its own client needs no arguments.
- ``replay_cassette``: the test's model calls go through a replay cassette
  (`promptimus.testing.replay`) at ``cassettes/<test file>/<test name>.json`` beside the test
  file, in the mode ``--replay-mode`` names (``replay`` by default: recorded requests are
  answered from the file, new ones recorded; ``strict`` in CI: a new request fails the test;
  ``record`` to write the cassettes afresh).

Enable with ``pytest_plugins = ["promptimus.testing.pytest_plugin"]`` in a ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from promptimus.testing.fake_openai import FakeOpenAIServer
    from promptimus.testing.replay import Cassette


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--replay-mode",
        choices=("record", "replay", "strict"),
        default=None,
        help="how the replay_cassette fixture treats model calls: record them afresh, replay "
        "the recorded ones and record new ones (default), or strict: fail on a new one",
    )
    parser.addini("replay_mode", "the default of --replay-mode", default="replay")


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAIServer]:
    from promptimus.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def fake_openai_env(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> FakeOpenAIServer:
    monkeypatch.setenv("OPENAI_API_KEY", fake_openai.api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    return fake_openai


@pytest.fixture
def replay_cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    from promptimus.testing.replay import replay

    mode = request.config.getoption("--replay-mode") or request.config.getini("replay_mode")
    test_file = request.node.path
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.node.name)
    path = test_file.parent / "cassettes" / test_file.stem / f"{name}.json"
    with replay(path, mode=mode) as cassette:
        yield cassette
