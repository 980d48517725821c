"""Compaction in a run: before each step's request, the conversation is compacted if the
agent's predictor has a `Compactor` and the conversation is over its trigger.

Only the history the run started from may change (the run's own messages, its request and tool
loop, stay as they are), and only between steps. The stream shows a `CompactionEvent`, the
observers (tracing, the board) a "compaction" event, and the run record counts it; when the run
succeeds, the memory keeps the compacted history in place of the one it started from, so the
next run starts from it and does not compact it again.
"""

from __future__ import annotations

import dataclasses

from ...dto import Message, Usage
from ...dto.run_record import CompactionRecord
from ...modules.compaction.token_count import conversation_tokens
from ..events import CompactionEvent
from .active_run import ActiveRun
from .model_call import ModelRequest

__all__ = [
    "compact_conversation",
    "keep_compacted_history",
    "record_native_compaction",
    "with_native_edits",
]

_NATIVE_STEPS = {
    "clear_tool_uses_20250919": "clear_tool_results",
    "clear_thinking_20251015": "clear_thinking",
}
"""The step each of the server's context edits stands for."""


async def compact_conversation(run: ActiveRun) -> None:
    """Compact `run`'s conversation before its next step's request, if it is over the
    trigger of the agent's compactor."""
    compactor = run.agent.predictor.compactor
    if compactor is None or run.history_size == 0:
        return
    if not compactor.needed(run.conversation, run.llm):
        return
    # a span of its own; a step of a durable run
    done = await run.agent.executor.compact(compactor, run.conversation, run.llm, run.history_size)
    if done is None:
        return
    if run.compacted_from is None:
        run.compacted_from = run.conversation[: run.history_size]
    run.conversation = done.messages
    run.history_size += done.written - done.replaced
    step = len(run.record.steps)
    run.record.compactions.append(
        CompactionRecord(step, done.tokens_before, done.tokens_after, done.steps, done.usage)
    )
    if run.emit is not None:
        run.emit(
            CompactionEvent(step, done.tokens_before, done.tokens_after, done.steps, done.usage)
        )


def keep_compacted_history(run: ActiveRun) -> None:
    """Before a successful run's commit: the memory's history, if the run compacted it, is
    replaced by its compacted form (left alone if another run changed the memory since)."""
    if run.compacted_from is not None:
        compacted = run.conversation[: run.history_size]
        run.agent.executor.keep_history(run.memory, run.compacted_from, compacted)


def with_native_edits(run: ActiveRun, request: ModelRequest) -> ModelRequest:
    """`request` carrying the context edits of a native compactor (``Compactor(native=True)``
    on a provider whose server clears context itself), or its server-side compaction entry,
    unless the request sets its own."""
    compactor = run.agent.predictor.compactor
    if compactor is None or "context_management" in request.params:
        return request
    threshold = compactor.native_threshold(run.llm)
    if threshold is not None:
        entry = {"type": "compaction", "compact_threshold": threshold}
        return dataclasses.replace(
            request, params={**request.params, "context_management": [entry]}
        )
    edits = compactor.native_edits(run.llm)
    if not edits:
        return request
    params = {**request.params, "context_management": {"edits": edits}}
    return dataclasses.replace(request, params=params)


def record_native_compaction(run: ActiveRun, request: ModelRequest, reply: Message) -> None:
    """A step whose request the server edited (`Message.context_edits`) is a compaction: the
    record and the stream show it with the server's figures (the input it read, and that plus
    what its edits cleared), before the step itself is recorded."""
    if not reply.context_edits or "context_management" not in request.params:
        return
    if any(edit.get("type") == "compaction" for edit in reply.context_edits):
        _record_server_compaction(run, request, reply)
        return
    cleared = sum(_count(edit.get("cleared_input_tokens")) for edit in reply.context_edits)
    after = reply.usage.prompt_tokens if reply.usage is not None else 0
    steps = tuple(
        _NATIVE_STEPS.get(str(edit.get("type")), str(edit.get("type")))
        for edit in reply.context_edits
    )
    step = len(run.record.steps)
    run.record.compactions.append(CompactionRecord(step, after + cleared, after, steps, Usage()))
    if run.emit is not None:
        run.emit(CompactionEvent(step, after + cleared, after, steps, Usage()))


def _record_server_compaction(run: ActiveRun, request: ModelRequest, reply: Message) -> None:
    """A step whose input the server compacted into one item: after, the input it read
    (its usage); before, the conversation's size as the trigger counts it."""
    after = reply.usage.prompt_tokens if reply.usage is not None else 0
    before = conversation_tokens(request.messages)
    step = len(run.record.steps)
    steps = ("server_compaction",)
    run.record.compactions.append(CompactionRecord(step, before, after, steps, Usage()))
    if run.emit is not None:
        run.emit(CompactionEvent(step, before, after, steps, Usage()))


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
