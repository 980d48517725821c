"""`RunContext`: what a tool function or a dynamic system prompt may know about the run calling it.

A tool asks for it by annotating a parameter with `RunContext` (or `RunContext[MyDeps]`); the
parameter is injected by the agent and never shown to the model::

    @Tool.decorate
    async def balance(ctx: RunContext[Bank], account: str) -> float:
        return await ctx.deps.balance(account)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeAlias, TypeVar

from ..dto import Message, Usage

if TYPE_CHECKING:
    from ..dto.run_record import RunRecord

__all__ = ["RunContext"]

DepsT = TypeVar("DepsT")

HandoffView: TypeAlias = Callable[[list[Message], bool], list[Message]]
"""`(messages, include_tool_loop) -> messages`: the conversation a handed-off sub-agent sees."""


@dataclass(slots=True)
class RunContext(Generic[DepsT]):
    """Per-run data handed to tools and dynamic prompts.

    - `deps`: whatever the caller passed as `deps=` to the agent (a DB handle, a user id, ...).
    - `messages`: the conversation so far, including the current tool loop.
    - `step`: 0-based index of the LLM call within the run.
    - `usage`: tokens used so far in this run.
    - `tool_call_id`: the id of the tool call being executed (None outside a tool call).
    - `record`: the run's `RunRecord`, when the agent keeps one.
    - `handoff_view`: how the calling agent shows `messages` to a sub-agent with
      `handoff_history` (it knows which messages are its tool loop); None: native tool calls.
    """

    deps: DepsT = None  # type: ignore[assignment]
    messages: list[Message] = field(default_factory=list)
    step: int = 0
    usage: Usage = field(default_factory=Usage)
    tool_call_id: str | None = None
    record: RunRecord | None = None
    handoff_view: HandoffView | None = None

    def for_tool_call(self, tool_call_id: str | None) -> RunContext[DepsT]:
        """A copy for one tool call (sharing `deps`, `messages`, `usage` and `record`)."""
        return RunContext(
            deps=self.deps,
            messages=self.messages,
            step=self.step,
            usage=self.usage,
            tool_call_id=tool_call_id,
            record=self.record,
            handoff_view=self.handoff_view,
        )

    def __repr__(self) -> str:
        return (
            f"RunContext(deps={type(self.deps).__name__}, messages={len(self.messages)}, "
            f"step={self.step}, tool_call_id={self.tool_call_id!r})"
        )
