"""Calls the provider's server ran while it wrote a reply (hosted tools: a web search, a code
interpreter run). Nothing of them runs here: a stream shows each as a `ToolCallEvent` and its
`ToolResultEvent`, both marked `hosted`, as soon as its item arrives; observers (a trace) hear of
each once the step is recorded; the run record reads them from the reply
(`StepRecord.hosted_calls`)."""

from __future__ import annotations

from collections.abc import Iterable

from ...dto import HostedToolCall
from ...dto.run_record import StepRecord, ToolCallRecord
from ...observe.provider_calls import report_event
from ..events import ToolCallEvent, ToolResultEvent
from .agent import LoopAgent

__all__ = ["hosted_events", "report_hosted_calls"]


def hosted_events(
    calls: Iterable[HostedToolCall], step: int
) -> list[ToolCallEvent | ToolResultEvent]:
    """The call and result events of `calls`, made at step `step`."""
    events: list[ToolCallEvent | ToolResultEvent] = []
    for call in calls:
        entry = ToolCallRecord.of_hosted(call)
        events.append(ToolCallEvent(entry.id, entry.name, entry.arguments, step, hosted=True))
        result = entry.result if entry.error is None else entry.error
        events.append(ToolResultEvent(entry.id, entry.name, result or "", 0.0, step, hosted=True))
    return events


def report_hosted_calls(agent: LoopAgent, step: StepRecord) -> None:
    """Tell the observers (a trace: span events of the agent's span) of the step's calls the
    server ran."""
    for call, entry in zip(step.reply.hosted_calls or (), step.hosted_calls, strict=True):
        report_event(
            agent,
            "hosted_tool_call",
            {
                "tool": entry.name,
                "tool_call_id": entry.id or "",
                "step": step.index,
                "status": call.status or "",
                "arguments": entry.arguments,
                "result": entry.result or "",
                **({"error": entry.error} if entry.error is not None else {}),
            },
        )
