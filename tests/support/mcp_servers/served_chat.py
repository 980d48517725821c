"""Served by the tests
(`python -m promptimus.mcp serve tests/support/mcp_servers/served_chat.py:<name>`)
to check that every MCP call runs in its own `pm.Session`.

`chat` remembers the conversation (a `MemoryModule`) and asks the fake OpenAI server whose URL
and key are in FAKE_OPENAI_BASE_URL / FAKE_OPENAI_API_KEY; `tools` holds `visits`, a function
tool counting the calls made in the current session.
"""

from __future__ import annotations

import os

from promptimus import Module, current_session
from promptimus.llms.openai import OpenAILike
from promptimus.modules.memory import MemoryModule
from promptimus.tools.tool import Tool


class Chat(Module):
    """Chat with a memory of the conversation."""

    def __init__(self) -> None:
        super().__init__()
        self.talk = MemoryModule(memory_size=20, system_prompt="You chat.")

    async def forward(self, message: str) -> str:
        """Say something.

        Args:
            message: what to say.
        """
        reply = await self.talk.forward(message)
        return reply.content


class _Count:
    def __init__(self) -> None:
        self.n = 0


class _Key:
    pass


_KEY = _Key()


@Tool.decorate
def visits() -> str:
    """How many calls this session has seen (with this one)."""
    session = current_session()
    if session is None:
        return "no session"
    count = session.state(_KEY, _Count)
    count.n += 1
    return f"visit {count.n}"


chat = Chat().with_llm(
    OpenAILike(
        "fake-model",
        api_key=os.environ.get("FAKE_OPENAI_API_KEY", "sk-fake"),
        base_url=os.environ.get("FAKE_OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        timeout=30.0,
    )
)
tools = [visits]
