"""The served module as an a2a-sdk `AgentExecutor`: one A2A task is one run of the module in the
caller's conversation (the task's `contextId`), its events translated as they happen.

- The task goes submitted → working → completed, failed (the error named, never a traceback)
  or canceled (`tasks/cancel` stops the run; a stopped run writes nothing, so the conversation
  stays as it was).
- The answer streams as chunks of one artifact, "answer": each piece of text is appended as the
  model writes it (text a step wrote before it called tools is replaced by the next step's),
  and the last chunk replaces it with the whole answer (`append: false`, `lastChunk: true`),
  so the task keeps one text part, and a structured answer or a guardrail's replacement is
  what the caller ends with. The stream is the agent's `stream()`, which never carries what a
  guardrail held back.
- Tool calls and tool progress (`ctx.progress(...)`, also from nested agents) are status
  updates in the working state, each with a short agent message.
- A tool call waiting for approval makes the task `input-required`; the status message lists
  the calls (a data part `{"pending": [{"id", "tool", "arguments"}]}`). The caller's next
  message to that task answers: a data part `{"approvals": {id: true | false | "reason"}}`, or
  the text `approve` / `deny` for all of them. The run then continues where it paused.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from a2a.helpers.proto_helpers import get_data_parts, get_message_text
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message, Part, Task, TaskState, TaskStatus

from ..agents.events import (
    AgentEvent,
    FinalResult,
    NeedsApproval,
    SubAgentEvent,
    TextDelta,
    ToolCallEvent,
    ToolProgress,
)
from ..agents.run_state import RunState
from .a2a_slots import TICKET, RunTicket
from .openai_chat import run_failure
from .served import Served
from .served_run import ClientGone, ServedRun
from .served_text import served_text

__all__ = ["ServedExecutor"]

ANSWER = "answer"
_APPROVE = {"approve", "approved", "yes", "y"}
_DENY = {"deny", "denied", "no", "n"}


@dataclass
class _Paused:
    state: RunState
    pending: list[str]


@dataclass
class _Answer:
    """The answer artifact: each piece appended as it streams; the finished answer replaces it
    whole, so the task keeps it as one text part (and a structured answer or a guardrail's
    replacement is what the caller ends with)."""

    updater: TaskUpdater
    artifact_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created: bool = False

    async def piece(self, text: str) -> None:
        await self._send(text, append=self.created)

    def tools_called(self) -> None:
        """The next step's text replaces what this step wrote before it called tools."""
        self.created = False

    async def finish(self, answer: str) -> None:
        await self._send(answer, append=False, last=True)

    async def _send(self, text: str, *, append: bool, last: bool = False) -> None:
        await self.updater.add_artifact(
            [Part(text=text)],
            artifact_id=self.artifact_id,
            name=ANSWER,
            append=append,
            last_chunk=last,
        )
        self.created = True


class ServedExecutor(AgentExecutor):
    def __init__(self, served: Served) -> None:
        self._served = served
        self._runs: dict[str, ServedRun] = {}
        self._paused: dict[tuple[str, str], _Paused] = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        call = context.call_context
        user = call.user.user_name
        task_id = context.task_id or ""
        # a message continuing a task may leave its contextId out: the task's is the one
        task = context.current_task
        context_id = task.context_id if task is not None else context.context_id or ""
        message = context.message
        if message is None:  # the request handler always passes one; a guard for the types
            return
        ticket: RunTicket | None = call.state.get(TICKET)
        if ticket is None or not ticket.claim():
            self._served.slots.take()  # a run the endpoint did not count (not expected)
        updater = TaskUpdater(event_queue, task_id, context_id)
        try:
            run = await self._start(context, message, updater, user, task_id, context_id)
        except BaseException:
            self._served.slots.release()
            raise
        if run is None:
            self._served.slots.release()
            return
        self._runs[task_id] = run
        try:
            await self._translate(run, updater, user, task_id)
        finally:
            self._runs.pop(task_id, None)

    async def _start(
        self,
        context: RequestContext,
        message: Message,
        updater: TaskUpdater,
        user: str,
        task_id: str,
        context_id: str,
    ) -> ServedRun | None:
        """The run `message` starts (its slot already taken), or None when it starts none."""
        if context.current_task is None:
            await updater.event_queue.enqueue_event(
                Task(
                    id=task_id,
                    context_id=context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[message],
                )
            )
        request: str | None = get_message_text(message)
        resume: RunState | None = None
        approvals: dict[str, Any] | None = None
        paused = self._paused.pop((user, task_id), None)
        if paused is not None:
            approvals, problem = _approvals(message, paused.pending)
            if approvals is None:
                self._paused[(user, task_id)] = paused
                await updater.requires_input(updater.new_agent_message([Part(text=problem)]))
                return None
            request, resume = None, paused.state
        await updater.start_work()
        return ServedRun(
            self._served.module,
            request,
            self._served.session(user, context_id),
            self._served.slots,
            resume=resume,
            approvals=approvals,
        )

    async def _translate(
        self, run: ServedRun, updater: TaskUpdater, user: str, task_id: str
    ) -> None:
        answer = _Answer(updater)
        try:
            async for event in run.events(None):
                if isinstance(event, TextDelta):
                    await answer.piece(event.text)
                elif isinstance(event, ToolCallEvent):
                    answer.tools_called()
                    await _working(updater, f"Calling the tool {event.name}.", tool=event.name)
                elif isinstance(event, ToolProgress | SubAgentEvent):
                    progress = _progress(event)
                    if progress is not None:
                        await _working(
                            updater,
                            progress.message,
                            tool=progress.name,
                            fraction=progress.fraction,
                        )
                elif isinstance(event, NeedsApproval):
                    await self._pause(event, updater, user, task_id)
                    return
                elif isinstance(event, FinalResult):
                    text = served_text(event.output)
                    if not text:
                        await _fail(updater, "The module gave an empty answer.")
                        return
                    await answer.finish(text)
        except ClientGone:  # cancelled by tasks/cancel: the request handler marks it canceled
            return
        except Exception as exc:
            await _fail(updater, run_failure(exc).message)
            return
        await updater.complete()

    async def _pause(
        self, event: NeedsApproval, updater: TaskUpdater, user: str, task_id: str
    ) -> None:
        self._paused[(user, task_id)] = _Paused(event.state, [p.id for p in event.pending])
        pending = [{"id": p.id, "tool": p.tool, "arguments": p.arguments} for p in event.pending]
        names = ", ".join(f"{p.tool} ({p.id})" for p in event.pending)
        text = (
            f"These tool calls wait for your approval: {names}. Answer with `approve` or "
            '`deny`, or a data part {"approvals": {"<id>": true | false | "<reason>"}}.'
        )
        data = Part()
        data.data.struct_value.update({"pending": pending})
        await updater.requires_input(updater.new_agent_message([Part(text=text), data]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop the task's run and wait until it has stopped (it then writes nothing); the
        request handler marks the task canceled."""
        task_id = context.task_id or ""
        self._paused.pop((context.call_context.user.user_name, task_id), None)
        run = self._runs.get(task_id)
        if run is not None:
            await run.cancel()


def _progress(event: ToolProgress | SubAgentEvent) -> ToolProgress | None:
    inner: AgentEvent = event
    while isinstance(inner, SubAgentEvent):
        inner = inner.event
    return inner if isinstance(inner, ToolProgress) else None


async def _working(
    updater: TaskUpdater, text: str, *, tool: str, fraction: float | None = None
) -> None:
    metadata: dict[str, Any] = {"tool": tool}
    if fraction is not None:
        metadata["fraction"] = fraction
    await updater.update_status(
        TaskState.TASK_STATE_WORKING,
        updater.new_agent_message([Part(text=text)]),
        metadata=metadata,
    )


async def _fail(updater: TaskUpdater, text: str) -> None:
    await updater.failed(updater.new_agent_message([Part(text=text)]))


def _approvals(message: Message, pending: list[str]) -> tuple[dict[str, Any] | None, str]:
    """The decisions `message` gives for the `pending` call ids, or None and what to say."""
    for data in get_data_parts(message.parts):
        given = data.get("approvals") if isinstance(data, dict) else None
        if isinstance(given, dict):
            if set(given) != set(pending):
                return None, f"Answer each pending tool call, by its id: {pending}."
            if any(not isinstance(v, bool | str) for v in given.values()):
                return None, "Each approval is true, false or a reason text (a denial)."
            return dict(given), ""
    word = get_message_text(message).strip().lower().rstrip(".!")
    if word in _APPROVE:
        return dict.fromkeys(pending, True), ""
    if word in _DENY:
        return dict.fromkeys(pending, False), ""
    return None, (
        f"The tool calls {pending} still wait for your approval: answer `approve` or `deny`, "
        'or a data part {"approvals": {"<id>": true | false | "<reason>"}}.'
    )
