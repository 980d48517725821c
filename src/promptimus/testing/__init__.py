"""Test helpers: a real HTTP fake of the OpenAI API for the real ``openai`` SDK to talk to.

    from promptimus.testing import FakeOpenAIServer, Reply, ToolCall, Fault

Importing this package does not import ``openai`` (or any network library); the server itself
loads on first use of `FakeOpenAIServer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports
from promptimus.testing.script import Fault, RecordedRequest, Reply, Route, ToolCall

if TYPE_CHECKING:
    from promptimus.testing.fake_openai import FakeOpenAIServer, SpawnedServer

__all__ = [
    "FakeOpenAIServer",
    "Fault",
    "RecordedRequest",
    "Reply",
    "Route",
    "SpawnedServer",
    "ToolCall",
]


# Lazy so `python -m promptimus.testing.fake_openai` does not import that module twice.
__getattr__, __dir__ = lazy_exports(
    __name__, {"FakeOpenAIServer": "fake_openai", "SpawnedServer": "fake_openai"}, globals()
)
