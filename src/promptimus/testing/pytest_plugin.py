"""Pytest fixtures for the fake OpenAI server.

- ``fake_openai``: a started `FakeOpenAIServer`, one per test.
- ``fake_openai_env``: the same server, with ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` pointing at
  it for the duration of the test, so code that builds its own client needs no arguments.

Enable with ``pytest_plugins = ["promptimus.testing.pytest_plugin"]`` in a ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from promptimus.testing.fake_openai import FakeOpenAIServer


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
