"""The agent's `stream()` events as AG-UI events (`ag-ui-protocol`'s models), one run at a time.

A `Translation` keeps what the protocol needs across events: the text or reasoning message that
is open (closed before anything else starts), the ids given to tool calls that have none, and
one subagent invocation per nested agent's tool call. See `promptimus.serve.ag_ui` for the
whole mapping.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ..agents.events import (
    AgentEvent,
    CompactionEvent,
    ReasoningDelta,
    StepEnd,
    SubAgentEvent,
    TextDelta,
    ToolCallEvent,
    ToolErrorEvent,
    ToolProgress,
    ToolResultEvent,
)

__all__ = ["COMPACTION", "TOOL_PROGRESS", "Translation", "new_id"]

TOOL_PROGRESS = "tool_progress"
COMPACTION = "compaction"


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


@dataclass
class _Lane:
    """One agent's stream within the run: the parent's own (`subagent` None) or a nested
    agent's invocation. Each keeps its open message and its calls' ids."""

    subagent: str | None
    text: str | None = None
    reasoning: str | None = None
    step_text: str = ""
    calls: dict[str, str] = field(default_factory=dict)
    unnamed: list[tuple[str, str]] = field(default_factory=list)
    per_step: dict[int, int] = field(default_factory=dict)


class Translation:
    """Turns one run's agent events into AG-UI events (`events(event)`), and closes what is
    open at its end (`close()`). `answered`: the calls whose results the client sent (its
    front-end tools' calls): their results are not sent back to it."""

    def __init__(
        self, answered: set[str] | None = None, unnamed: list[tuple[str, str]] | None = None
    ) -> None:
        self.main = _Lane(None, unnamed=list(unnamed or []))
        self._answered = answered or set()
        self._subagents: dict[tuple[str, str | None], _Lane] = {}
        self._by_call: dict[str, tuple[str, str | None]] = {}

    @property
    def streamed_text(self) -> str:
        """The text the last step of the main agent streamed (its answer, when it has one)."""
        return self.main.step_text

    def events(self, event: AgentEvent) -> Iterator[BaseEvent]:
        yield from self._in_lane(self.main, event)

    def close(self) -> Iterator[BaseEvent]:
        """Close what is still open: the main agent's message, and nested runs whose call never
        got its result (the run failed or paused meanwhile)."""
        yield from self._close_open(self.main)
        for call in list(self._by_call):
            yield from self._finish_subagents(call)
        for key in list(self._subagents):  # nested runs no call of this run started
            inner = self._subagents.pop(key)
            yield from self._close_open(inner)
            assert inner.subagent is not None
            yield SubagentFinishedEvent(subagent_run_id=inner.subagent)

    def answer(self, text: str) -> Iterator[BaseEvent]:
        """The answer as a text message of its own (structured output, a module that does not
        stream, or what the streamed text lacks)."""
        if not text:
            return
        yield from self._close_open(self.main)
        message = new_id("msg")
        yield TextMessageStartEvent(message_id=message, role="assistant")
        yield TextMessageContentEvent(message_id=message, delta=text)
        yield TextMessageEndEvent(message_id=message)

    # ------------------------------------------------------------------ one lane

    def _in_lane(self, lane: _Lane, event: AgentEvent) -> Iterator[BaseEvent]:
        sub = lane.subagent
        if isinstance(event, TextDelta):
            if not event.text:
                return
            yield from self._close_reasoning(lane)
            if lane.text is None:
                lane.text = new_id("msg")
                lane.step_text = ""
                yield TextMessageStartEvent(
                    message_id=lane.text, role="assistant", subagent_run_id=sub
                )
            lane.step_text += event.text
            yield TextMessageContentEvent(
                message_id=lane.text, delta=event.text, subagent_run_id=sub
            )
        elif isinstance(event, ReasoningDelta):
            if not event.text:
                return
            yield from self._close_text(lane)
            if lane.reasoning is None:
                lane.reasoning = new_id("rsn")
                yield ReasoningStartEvent(message_id=lane.reasoning, subagent_run_id=sub)
                yield ReasoningMessageStartEvent(message_id=lane.reasoning, subagent_run_id=sub)
            yield ReasoningMessageContentEvent(
                message_id=lane.reasoning, delta=event.text, subagent_run_id=sub
            )
        elif isinstance(event, ToolCallEvent):
            parent_message = lane.text
            yield from self._close_open(lane)
            lane.step_text = ""
            call = self._call_id(lane, event.id, event.name, event.step)
            yield ToolCallStartEvent(
                tool_call_id=call,
                tool_call_name=event.name,
                parent_message_id=parent_message,
                subagent_run_id=sub,
            )
            if event.arguments:
                yield ToolCallArgsEvent(
                    tool_call_id=call, delta=event.arguments, subagent_run_id=sub
                )
            yield ToolCallEndEvent(tool_call_id=call, subagent_run_id=sub)
        elif isinstance(event, ToolResultEvent | ToolErrorEvent):
            yield from self._close_open(lane)
            call = self._result_id(lane, event.id, event.name)
            if lane.subagent is None and call in self._answered:
                return  # the client's own result of a front-end call: it has it
            yield from self._finish_subagents(call)
            content = event.result if isinstance(event, ToolResultEvent) else event.error
            yield ToolCallResultEvent(
                message_id=new_id("tool"),
                tool_call_id=call,
                content=content,
                role="tool",
                subagent_run_id=sub,
            )
        elif isinstance(event, ToolProgress):
            value: dict[str, Any] = {
                "toolCallId": lane.calls.get(event.id or "", event.id),
                "name": event.name,
                "message": event.message,
                "fraction": event.fraction,
            }
            if event.server is not None:
                value["server"] = event.server
            yield CustomEvent(name=TOOL_PROGRESS, value=value, subagent_run_id=sub)
        elif isinstance(event, CompactionEvent):
            value = {
                "step": event.step,
                "tokensBefore": event.tokens_before,
                "tokensAfter": event.tokens_after,
                "steps": list(event.steps),
            }
            yield CustomEvent(name=COMPACTION, value=value, subagent_run_id=sub)
        elif isinstance(event, StepEnd):
            yield from self._close_open(lane)
        elif isinstance(event, SubAgentEvent):
            yield from self._nested(lane, event)
        # GuardrailEvent, PartialOutput: nothing of them goes out (what a guardrail held back
        # never entered the stream; the structured answer goes out whole at the end)

    def _nested(self, lane: _Lane, event: SubAgentEvent) -> Iterator[BaseEvent]:
        parent_call = None
        if event.tool_call_id is not None:
            parent_call = lane.calls.get(event.tool_call_id, event.tool_call_id)
        key = (event.path, parent_call)
        inner = self._subagents.get(key)
        if inner is None:
            run = new_id("sub")
            inner = self._subagents[key] = _Lane(run)
            if parent_call is not None:
                self._by_call[parent_call] = key
            yield SubagentStartedEvent(
                subagent_run_id=run,
                name=event.path,
                parent_subagent_run_id=lane.subagent,
                parent_tool_call_id=parent_call,
                metadata={"path": event.path},
            )
        yield from self._in_lane(inner, event.event)

    def _finish_subagents(self, call: str) -> Iterator[BaseEvent]:
        key = self._by_call.pop(call, None)
        if key is None:
            return
        inner = self._subagents.pop(key)
        yield from self._close_open(inner)
        for nested_call in list(inner.calls.values()):
            yield from self._finish_subagents(nested_call)
        assert inner.subagent is not None
        yield SubagentFinishedEvent(subagent_run_id=inner.subagent)

    # ------------------------------------------------------------------ ids and closing

    def _call_id(self, lane: _Lane, given: str | None, name: str, step: int) -> str:
        position = lane.per_step.get(step, 0)
        lane.per_step[step] = position + 1
        if given is not None:
            return lane.calls.setdefault(given, given)
        # a text-protocol agent's calls have no id: each is named as a paused run names it
        # (`call_<step>_<position>`), and its result is matched by the tool's name
        call = f"call_{step}_{position}"
        lane.unnamed.append((name, call))
        return call

    def _result_id(self, lane: _Lane, given: str | None, name: str) -> str:
        if given is not None:
            return lane.calls.get(given, given)
        for index, (called, call) in enumerate(lane.unnamed):
            if called == name:
                del lane.unnamed[index]
                return call
        return new_id("call")

    def _close_text(self, lane: _Lane) -> Iterator[BaseEvent]:
        if lane.text is not None:
            yield TextMessageEndEvent(message_id=lane.text, subagent_run_id=lane.subagent)
            lane.text = None

    def _close_reasoning(self, lane: _Lane) -> Iterator[BaseEvent]:
        if lane.reasoning is not None:
            sub = lane.subagent
            yield ReasoningMessageEndEvent(message_id=lane.reasoning, subagent_run_id=sub)
            yield ReasoningEndEvent(message_id=lane.reasoning, subagent_run_id=sub)
            lane.reasoning = None

    def _close_open(self, lane: _Lane) -> Iterator[BaseEvent]:
        yield from self._close_reasoning(lane)
        yield from self._close_text(lane)
