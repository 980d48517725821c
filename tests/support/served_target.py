"""A module for `promptimus serve` in the tests: an agent whose model echoes what it hears,
each reply waiting until the file named by $SERVED_GATE exists (when that variable is set), so
a test can hold a request while it stops the server."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.llms.scripted import ScriptedLLM


def _wait_at(gate: Path) -> None:
    """Note that a reply started, then wait until the test opens the gate (another process:
    a file is what both see)."""
    gate.with_suffix(".started").write_text("started")
    while not gate.exists():
        time.sleep(0.02)


async def reply(history: list[Message], kwargs: dict[str, Any]) -> str:
    gate = os.environ.get("SERVED_GATE")
    if gate:
        await asyncio.to_thread(_wait_at, Path(gate))
    return "heard: " + " | ".join(m.content for m in history if m.role == MessageRole.USER)


def agent() -> OpenaiToolCallingAgent:
    served = OpenaiToolCallingAgent("You repeat what you hear.")
    served.with_llm(ScriptedLLM(reply))
    return served
