"""`StreamedAnswer`: the partial objects of a structured answer, read from a streamed reply's
pieces: from its text, or, when the answer comes as a call of the answer tool (see
`promptimus.modules.answer_tool`), from that call's arguments as they stream in."""

from __future__ import annotations

from pydantic import BaseModel

from ..dto import MessageDelta
from .partial_output import PartialReader

__all__ = ["StreamedAnswer"]


class StreamedAnswer:
    """Reads a streamed reply into partial objects of `model` (see `PartialReader`).

    `tool` None: the reply's text is the answer. `tool` a name: the arguments of the reply's
    first call of that tool are (its text is not read: in that mode text is what the model says
    around its calls, and a step whose reply calls other tools is no answer)."""

    __slots__ = ("_index", "_reader", "tool")

    def __init__(self, model: type[BaseModel], tool: str | None = None) -> None:
        self._reader = PartialReader(model)
        self.tool = tool
        self._index: int | None = None

    def read(self, delta: MessageDelta) -> BaseModel | None:
        """The snapshot `delta` brings (None: nothing new validates)."""
        if self.tool is None:
            return self._reader.add(delta.content) if delta.content else None
        snapshot = None
        for piece in delta.tool_calls:
            if self._index is None and piece.name == self.tool:
                self._index = piece.index
            if piece.index == self._index and piece.arguments:
                snapshot = self._reader.add(piece.arguments) or snapshot
        return snapshot
