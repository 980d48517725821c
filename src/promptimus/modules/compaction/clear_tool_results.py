"""`ClearToolResults`: old tool results replaced by a short note naming the tool; the calls stay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...argument_checks import non_negative_int
from ...dto import Message, MessageRole
from ...errors import InvalidArgument
from .conversation import tool_names_by_call
from .step import CompactionStep, StepResult

__all__ = ["ClearToolResults", "cleared_note"]


def cleared_note(tool: str) -> str:
    """The text a cleared result of `tool` reads as."""
    return f"[The result of {tool} was cleared to save context; call it again if needed.]"


class ClearToolResults(CompactionStep):
    """Replaces the content of tool results older than the last `keep` (counted over the whole
    conversation) with a note naming the tool. The tool call and its result message both stay,
    so every provider still reads a call answered; the results of the tools named in `exclude`
    are never cleared. Cheap: no model call, and a cleared conversation reads the same to a
    prompt cache up to the first cleared result."""

    name = "clear_tool_results"

    def __init__(self, keep: int = 3, exclude: Iterable[str] = ()) -> None:
        super().__init__()
        self.keep = non_negative_int(keep, "ClearToolResults keep")
        if isinstance(exclude, str):
            raise InvalidArgument(
                f"ClearToolResults exclude must be a collection of tool names, got the string "
                f"{exclude!r}; write exclude=({exclude!r},)."
            )
        self.exclude = frozenset(exclude)

    async def apply(self, messages: list[Message], boundary: int) -> StepResult | None:
        results = [i for i, m in enumerate(messages) if m.role == MessageRole.TOOL]
        kept = set(results[len(results) - self.keep :]) if self.keep else set()
        names = tool_names_by_call(messages)
        head = list(messages[:boundary])
        changed = False
        for index in results:
            if index >= boundary or index in kept:
                continue
            message = head[index]
            tool = names.get(message.tool_call_id or "", "a tool")
            note = cleared_note(tool)
            if tool in self.exclude or (message.content == note and not message.images):
                continue
            head[index] = message.model_copy(
                update={"content": note, "images": [], "documents": []}
            )
            changed = True
        return StepResult(head) if changed else None

    def native_edit(self, trigger_tokens: int | None) -> dict[str, Any] | None:
        """Anthropic's ``clear_tool_uses`` edit: all but the last `keep` tool results cleared,
        those of `exclude` never; above `trigger_tokens` (the server's default without)."""
        edit: dict[str, Any] = {
            "type": "clear_tool_uses_20250919",
            "keep": {"type": "tool_uses", "value": self.keep},
        }
        if trigger_tokens is not None:
            edit["trigger"] = {"type": "input_tokens", "value": trigger_tokens}
        if self.exclude:
            edit["exclude_tools"] = sorted(self.exclude)
        return edit

    def extra_repr(self) -> str:
        exclude = f", exclude={sorted(self.exclude)!r}" if self.exclude else ""
        return f"keep={self.keep}{exclude}"
