"""`--model fake`: an offline stand-in for a language model, so every command runs without a key.

It runs in-process (no server, no port, no network) and says plainly that it is not a model:
each reply starts with `[OFFLINE fake model]`, repeats the last user message and counts the
messages it was sent, so a chat shows that its memory works.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ..dto import Message, MessageDelta, MessageRole, Usage
from ..llms.scripted import split_message

MARKER = "[OFFLINE fake model]"


class OfflineModel:
    model_name = "fake"

    def __repr__(self) -> str:
        return "OfflineModel()"

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        said = next((m.content for m in reversed(history) if m.role == MessageRole.USER), "")
        text = (
            f"{MARKER} You said: {said!r}. I saw {len(history)} messages; no language model "
            "was called (pass --model provider:name for real answers)."
        )
        words_in = sum(len(m.content.split()) for m in history)
        words_out = len(text.split())
        usage = Usage(
            prompt_tokens=words_in, completion_tokens=words_out, total_tokens=words_in + words_out
        )
        return Message(
            role=MessageRole.ASSISTANT,
            content=text,
            finish_reason="stop",
            usage=usage,
            model_name=self.model_name,
        )

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        for delta in split_message(await self.achat(history, **kwargs)):
            yield delta
