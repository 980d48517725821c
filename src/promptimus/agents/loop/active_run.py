"""`ActiveRun`: what one agent run holds while it goes, and the events it shows a stream."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...dto import Message
from ...dto.run_record import RunRecord, StepRecord, ToolCallRecord
from ...modules.memory import Memory
from ...observe.provider_calls import report_event
from ...prompts.base_prompt import BasePrompt
from ...tools.run_context import RunContext
from ..events import (
    AgentEvent,
    StepEnd,
    SubAgentEvent,
    ToolErrorEvent,
    ToolProgress,
    ToolResultEvent,
)
from .agent import LoopAgent
from .decisions import LoopState, ToolInvocation

__all__ = ["ActiveRun", "Emit", "ToolListener", "tool_event"]

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
    listener: ToolListener | None = None
    """What the run's tool calls report to (made at the first tool step)."""
    history_size: int = 0
    """How many messages at the start of `conversation` came from the memory (the history the
    run started from, as compaction left it); the run's own messages follow them."""
    compacted_from: list[Message] | None = None
    """The history the run started from, once compaction changed it (the memory gets the
    compacted history in its place when the run succeeds)."""
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
        if self.listener is None:
            self.listener = ToolListener(self.agent, self.emit)
        return RunContext(
            deps=self.deps,
            messages=self.conversation,
            step=index,
            usage=self.record.usage,
            record=self.record,
            handoff_view=self.agent._handoff_view(),
            listener=self.listener,
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


class ToolListener:
    """Hears what a run's tool calls report while they run (`RunListener`): their progress, and
    the events of the agent runs they start, shown to the run's stream as `ToolProgress` and
    `SubAgentEvent`. A tool running in a thread of its own reports through the run's loop."""

    __slots__ = ("agent", "emit", "loop", "thread")

    def __init__(self, agent: LoopAgent, emit: Emit | None) -> None:
        self.agent, self.emit = agent, emit
        self.thread = threading.get_ident()
        self.loop = asyncio.get_running_loop() if emit is not None else None

    @property
    def streaming(self) -> bool:
        return self.emit is not None

    def progress(self, ctx: RunContext[Any], message: str, fraction: float | None) -> None:
        name = ctx.tool_name or ""
        report_event(
            self.agent,
            "tool_progress",
            {"tool": name, "tool_call_id": ctx.tool_call_id or "", "message": message}
            | ({} if fraction is None else {"fraction": fraction}),
        )
        if self.emit is not None:
            tool = self.agent._tool(name)
            server = tool.server if tool is not None else None
            self._show(ToolProgress(ctx.tool_call_id, name, message, fraction, ctx.step, server))

    def nested(self, ctx: RunContext[Any], path: str, event: object) -> None:
        if self.emit is not None:
            self._show(SubAgentEvent(path, ctx.tool_call_id, event, ctx.step))  # type: ignore[arg-type]

    def _show(self, event: AgentEvent) -> None:
        emit, loop = self.emit, self.loop
        assert emit is not None and loop is not None
        if threading.get_ident() == self.thread:
            emit(event)
        else:
            loop.call_soon_threadsafe(emit, event)


def tool_event(entry: ToolCallRecord, step: int) -> ToolResultEvent | ToolErrorEvent:
    """The stream event for a finished (or refused) tool call."""
    if entry.error is not None:
        return ToolErrorEvent(
            entry.id, entry.name, entry.error, entry.duration_s, step, entry.server
        )
    return ToolResultEvent(
        entry.id, entry.name, entry.result or "", entry.duration_s, step, entry.server, entry.images
    )
