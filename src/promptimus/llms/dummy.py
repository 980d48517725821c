"""``DummyLLM``: always answers the same text (the original promptimus test double; 0.1 spelled it
``DummyLLm``, a name compat still serves, with a warning)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from promptimus._compat_seam import compat_names
from promptimus.dto import Message, MessageDelta, MessageRole
from promptimus.llms.scripted import split_message


class DummyLLM:
    """Replies ``message`` to everything, after ``delay`` seconds; records calls in ``calls``."""

    def __init__(
        self, message: str = "dummy", delay: float = 0.0, model_name: str = "dummy"
    ) -> None:
        self.message = message
        self.delay = delay
        self.model_name = model_name
        self.calls: list[tuple[list[Message], dict[str, Any]]] = []

    def __repr__(self) -> str:
        return f"DummyLLM(message={self.message!r}, delay={self.delay!r})"

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        self.calls.append((list(history), dict(kwargs)))
        await asyncio.sleep(self.delay)  # even 0 yields, so a loop of calls can be cancelled
        return Message(
            role=MessageRole.ASSISTANT,
            content=self.message,
            finish_reason="stop",
            model_name=self.model_name,
        )

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        for delta in split_message(await self.achat(history, **kwargs)):
            yield delta


__getattr__ = compat_names(__name__)
