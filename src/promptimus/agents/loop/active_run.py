"""`ActiveRun`: what one agent run holds while it goes, and the events it shows a stream."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...dto import Message
from ...dto.run_record import RunRecord, StepRecord, ToolCallRecord
from ...modules.memory import Memory
from ...prompts.base_prompt import BasePrompt
from ...tools.run_context import RunContext
from ..events import AgentEvent, StepEnd, ToolErrorEvent, ToolResultEvent
from .agent import LoopAgent
from .decisions import LoopState, ToolInvocation

__all__ = ["ActiveRun", "Emit", "tool_event"]

Emit = Callable[[AgentEvent], object]
"""Receives the events of a streamed run as they happen."""


@dataclass(slots=True, eq=False)
class ActiveRun:
    """One run of `agent`: the conversation so far (`conversation`, what the next request
    carries after the system prompt), what the memory gains if the run succeeds (`keep`), the
    steps (LLM calls) used against `max_steps`, and the run's `record`. `emit` receives the
    events a stream shows; None when nobody listens, and then none are built."""

    agent: LoopAgent
    deps: Any
    prompt_vars: dict[str, Any]
    record: RunRecord
    emit: Emit | None
    prompt: BasePrompt
    llm: Any
    memory: Memory
    state: LoopState = field(default_factory=LoopState)
    conversation: list[Message] = field(default_factory=list)
    keep: list[Message] = field(default_factory=list)
    steps: int = 0
    guard_retries: dict[int, int] = field(default_factory=dict)
    """How many times each output guardrail (by id) sent an answer back in this run."""
    request: Any = None
    """The request as the run was given it (None: a resumed run)."""

    @classmethod
    def of(
        cls,
        agent: LoopAgent,
        deps: Any,
        prompt_vars: dict[str, Any],
        record: RunRecord,
        emit: Emit | None,
    ) -> ActiveRun:
        predictor = agent.predictor
        prompt: BasePrompt = predictor.prompt
        return cls(agent, deps, prompt_vars, record, emit, prompt, prompt.llm, predictor.memory)

    def tool_context(self, index: int) -> RunContext[Any]:
        """What the tools of step `index` see as `ctx` (the conversation up to their call)."""
        return RunContext(
            deps=self.deps,
            messages=self.conversation,
            step=index,
            usage=self.record.usage,
            record=self.record,
            handoff_view=self.agent._handoff_view(),
        )

    def observe(self, calls: list[ToolInvocation], records: list[ToolCallRecord]) -> None:
        """Add the messages that carry the tool results back to the model."""
        observations = self.agent._observations(calls, records)
        self.conversation = [*self.conversation, *observations]
        self.keep.extend(observations)

    def step_end(self, step: StepRecord, shown: Message | None = None) -> None:
        """Show a stream the step's end; `shown`: its reply as the guardrails left it, when
        they held it back (the record keeps what the model said)."""
        if self.emit is not None:
            message = step.reply if shown is None else shown
            self.emit(StepEnd(step.index, message, step.usage, self.record.usage))


def tool_event(entry: ToolCallRecord, step: int) -> ToolResultEvent | ToolErrorEvent:
    """The stream event for a finished (or refused) tool call."""
    if entry.error is not None:
        return ToolErrorEvent(
            entry.id, entry.name, entry.error, entry.duration_s, step, entry.server
        )
    return ToolResultEvent(
        entry.id, entry.name, entry.result or "", entry.duration_s, step, entry.server, entry.images
    )
