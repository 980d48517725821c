"""The LLM seam: anything with ``model_name``, ``achat`` and ``astream`` is an LLM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from promptimus.dto import Message, MessageDelta

__all__ = ["LLMProtocol"]


class LLMProtocol(Protocol):
    """A chat model.

    ``achat`` returns the whole assistant reply (content, tool calls, reasoning, usage,
    finish_reason). ``astream`` is an async generator of ``MessageDelta`` whose accumulation
    (see ``MessageAccumulator``) equals what ``achat`` would return. Extra keyword arguments
    (``tools``, ``temperature``, ``response_format``...) go to the model as request options.
    """

    model_name: str

    async def achat(self, history: list[Message], **kwargs: Any) -> Message: ...

    def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]: ...
