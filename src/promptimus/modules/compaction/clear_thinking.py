"""`ClearThinking`: old thinking dropped where the provider allows it."""

from __future__ import annotations

from typing import Any

from ...argument_checks import non_negative_int
from ...dto import Message, MessageRole, ThinkingBlock
from .step import CompactionStep, StepResult

__all__ = ["ClearThinking"]


class ClearThinking(CompactionStep):
    """Drops the thinking of assistant messages older than the last `keep` that have some.

    An answer's thinking (a reply without tool calls) goes whole: no provider needs it back. A
    reply that called tools keeps its thinking blocks, since they authenticate the calls they
    led to (Anthropic wants the thinking before its `tool_use`, Gemini each call's thought
    signature, the Responses API the reasoning item before its function call); only their
    readable copy (`reasoning`) goes. A Gemini signature on an answer's text (a block without
    text) stays too: it is a few bytes, and the text it signs is still sent."""

    name = "clear_thinking"

    def __init__(self, keep: int = 1) -> None:
        super().__init__()
        self.keep = non_negative_int(keep, "ClearThinking keep")

    async def apply(self, messages: list[Message], boundary: int) -> StepResult | None:
        thinking = [
            i
            for i, m in enumerate(messages)
            if m.role == MessageRole.ASSISTANT and (m.thinking or m.reasoning)
        ]
        kept = set(thinking[len(thinking) - self.keep :]) if self.keep else set()
        head = list(messages[:boundary])
        changed = False
        for index in thinking:
            if index >= boundary or index in kept:
                continue
            message = head[index]
            update: dict[str, object] = {"reasoning": None}
            if not message.tool_calls:
                kept_blocks = [b for b in message.thinking or () if _signs_answer(b)]
                update["thinking"] = kept_blocks or None
            if all(message.__dict__[key] == value for key, value in update.items()):
                continue  # its blocks stay with its calls, and there is nothing else
            head[index] = message.model_copy(update=update)
            changed = True
        return StepResult(head) if changed else None

    def native_edit(self, trigger_tokens: int | None) -> dict[str, Any] | None:
        """Anthropic's ``clear_thinking`` edit: the thinking of all but the last `keep`
        assistant turns that have some dropped (the server keeps what a tool use needs)."""
        return {
            "type": "clear_thinking_20251015",
            "keep": {"type": "thinking_turns", "value": self.keep},
        }

    def extra_repr(self) -> str:
        return f"keep={self.keep}"


def _signs_answer(block: ThinkingBlock) -> bool:
    return block.provider == "gemini" and not block.text
