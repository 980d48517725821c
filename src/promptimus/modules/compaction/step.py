"""`CompactionStep`: one way to make a conversation smaller, as a `Compactor` runs it."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...core import Module
from ...dto import Message, Usage

__all__ = ["CompactionStep", "StepResult"]


@dataclass(frozen=True, slots=True)
class StepResult:
    """What a step made of the part of a conversation it may change: its new `head` (the
    messages before the protected last turns) and what the step cost (`usage`: a summary's
    model call; zero for the steps that only clear)."""

    head: list[Message]
    usage: Usage = field(default_factory=Usage)


class CompactionStep(Module):
    """A compaction step. `apply` sees the whole conversation and `boundary`, where its
    protected part begins (the last turns; the current run's messages): it answers a new head
    for ``messages[:boundary]``, or None when it has nothing to do. It must keep every tool
    call with its results and every thinking block with what it led to."""

    name: ClassVar[str]

    @abstractmethod
    async def apply(self, messages: list[Message], boundary: int) -> StepResult | None:
        """The new head of `messages` (see the class docstring)."""

    def native_edit(self, trigger_tokens: int | None) -> dict[str, Any] | None:
        """This step as a context edit the provider's server applies itself (Anthropic's
        ``context_management.edits``; ``trigger_tokens``: the size it applies above), or None
        when the server has none like it and the step runs here."""
        return None

    async def forward(self, messages: list[Message], boundary: int) -> StepResult | None:
        return await self.apply(messages, boundary)
