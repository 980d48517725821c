"""`DurableExecutor`: the run's model requests, tool calls, guardrail checks, compactions, memory
reads and commits as DBOS steps.

Inside a durable run's workflow each of them is a step: DBOS records its result, and a run that
a crash interrupted replays the recorded results instead of doing the work again — a finished
model call is not sent again, a finished tool call is not run again, a finished guardrail check
is not made again (a judge that might decide otherwise the second time is not asked twice, and
the run takes the path it took). A check's step records its verdicts as plain data (which of
the check's guardrails, the action, text, reason and `stop`), never the guardrails themselves.
Outside a durable run (the same agent called directly) the executor it wraps does the work,
unchanged.

A step that was running at the crash runs again when the run resumes (at least once). That is
harmless for an idempotent tool; a tool marked `idempotent=False` (a payment, an email) must not
run twice silently. So before such a call, a marker step records that it began; when a resumed
run finds the marker but no result, the call's outcome is unknown, and `hold` pauses the run
for a person's decision (`needs_approval`, with the reason) instead of running it again.

A compaction of the conversation is a step too: the compacted conversation is recorded, so a
recovered run goes on from the same compacted history without asking for its summary again.
When the run names a stored conversation, its commit step also puts the compacted history in
the store, with the run's turn, as one unit (every later run starts from it).

The memory read and the commit are those of the run's own conversation: empty, or the stored
conversation it names (`promptimus.durable.conversation`, which also keeps a resumed commit
from appending its turn twice).

Step ids must come out the same in every execution of a run. Tool calls of one reply run
concurrently, so each call takes its ids synchronously when it starts (`DBOS.reserve_step`);
calls start in request order, so the ids do too. A guardrail check takes its id the same way,
where it starts: a parallel input check starts before the first model request and runs beside
it, and its id is taken before the request's.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dbos import DBOS, StepReservation

from ..agents.loop.decisions import ToolInvocation
from ..agents.loop.executor import GuardCheck, RunExecutor
from ..agents.loop.model_call import DeltaSink, ModelRequest
from ..core import ModuleDict
from ..dto import Message
from ..dto.run_record import ToolCallRecord
from ..errors import DurableInputMismatch
from ..guardrails.guardrail import Guardrail
from ..guardrails.screen import GuardOutcome
from ..guardrails.verdict import Verdict
from ..modules.compaction import Compaction, Compactor
from ..modules.memory import Memory
from ..prompts.base_prompt import BasePrompt
from ..tools.run_context import RunContext
from ..tools.tool import Tool
from .conversation import RunConversation

__all__ = ["OUTCOME_UNKNOWN", "DurableExecutor", "Execution", "executing", "execution"]

T = TypeVar("T")

MODEL_STEP = "promptimus.model"
TOOL_STEP = "promptimus.tool"
TOOL_BEGUN_STEP = "promptimus.tool-begun"
HISTORY_STEP = "promptimus.history"
COMMIT_STEP = "promptimus.commit"
COMMIT_BEGUN_STEP = "promptimus.commit-begun"
GUARDRAIL_STEP = "promptimus.guardrail"
COMPACTION_STEP = "promptimus.compaction"

OUTCOME_UNKNOWN = (
    "outcome unknown: the run stopped while this call was running and the tool is not "
    "idempotent, so it is not run again without a decision (check whether it took effect; "
    "approve to run it again, deny to tell the model it did not run)"
)


@dataclass(slots=True, eq=False)
class Execution:
    """One execution of a durable run's workflow (the first, or one resuming after a crash):
    the step ids reserved for the non-idempotent calls `hold` saw, and the ids of the steps
    earlier executions recorded (read once, when first needed). `conversation`: the stored
    conversation the run continues (`promptimus.durable.conversation`), None for a run that
    starts empty. `compacted`: the history the run started from and what compaction made of
    it, for the commit to put in the stored conversation."""

    workflow_id: str
    conversation: RunConversation | None = None
    compacted: tuple[list[Message], list[Message]] | None = None
    reserved: dict[int, tuple[ToolInvocation, Any, Any]] = field(default_factory=dict)
    _recorded: set[int] | None = None

    async def recorded(self) -> set[int]:
        if self._recorded is None:
            # read outside the workflow's context: inside it, DBOS would record the read as a
            # step and replay its first answer
            loop = asyncio.get_running_loop()
            steps = await loop.create_task(
                DBOS.list_workflow_steps_async(self.workflow_id, load_output=False),
                context=contextvars.Context(),
            )
            self._recorded = {step["function_id"] for step in steps}
        return self._recorded


_execution: contextvars.ContextVar[Execution | None] = contextvars.ContextVar(
    "promptimus_durable_execution", default=None
)


def execution() -> Execution | None:
    """The durable run executing in this context, None outside one (and inside its steps)."""
    return _execution.get()


@contextmanager
def executing(current: Execution | None) -> Iterator[None]:
    token = _execution.set(current)
    try:
        yield
    finally:
        _execution.reset(token)


async def _as_step_body(work: Callable[[], Awaitable[T]]) -> T:
    """Run `work` as a step's body: a sub-agent run inside it is not part of the workflow."""
    with executing(None):
        return await work()


class DurableExecutor(RunExecutor):
    """Wraps an agent's executor (see the module docstring)."""

    __slots__ = ("inner",)

    holds_calls = True

    def __init__(self, inner: RunExecutor) -> None:
        self.inner = inner

    async def history(self, memory: Memory) -> list[Message]:
        current = execution()
        if current is None:
            return await self.inner.history(memory)
        conversation = current.conversation

        def work() -> Awaitable[list[Message]]:
            if conversation is None:
                return self.inner.history(memory)
            return conversation.read(self.inner)

        return await DBOS.run_step_async({"name": HISTORY_STEP}, _as_step_body, work)

    async def call_model(
        self, prompt: BasePrompt, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> Message:
        if execution() is None:
            return await self.inner.call_model(prompt, request, on_delta)
        return await DBOS.run_step_async(
            {"name": MODEL_STEP},
            _as_step_body,
            lambda: self.inner.call_model(prompt, request, on_delta),
        )

    def check_guardrails(
        self, guards: Sequence[Guardrail], check: GuardCheck
    ) -> Awaitable[list[GuardOutcome]]:
        current = execution()
        if current is None:
            return self.inner.check_guardrails(guards, check)
        # the id now, where the check starts (a parallel check runs beside a model request)
        return self._recorded_check(current, DBOS.reserve_step(), guards, check)

    async def _recorded_check(
        self,
        current: Execution,
        step: StepReservation,
        guards: Sequence[Guardrail],
        check: GuardCheck,
    ) -> list[GuardOutcome]:
        async def verdicts() -> list[dict[str, Any]]:
            outcomes = await _as_step_body(lambda: self.inner.check_guardrails(guards, check))
            return [_recorded_verdict(guards, outcome) for outcome in outcomes]

        recorded = await step.run_async({"name": GUARDRAIL_STEP}, verdicts)
        return [_replayed_verdict(current, guards, verdict) for verdict in recorded]

    async def compact(
        self, compactor: Compactor, messages: list[Message], llm: Any, frozen_from: int
    ) -> Compaction | None:
        if execution() is None:
            return await self.inner.compact(compactor, messages, llm, frozen_from)
        return await DBOS.run_step_async(
            {"name": COMPACTION_STEP},
            _as_step_body,
            lambda: self.inner.compact(compactor, messages, llm, frozen_from),
        )

    def keep_history(self, memory: Memory, old: list[Message], new: list[Message]) -> None:
        current = execution()
        if current is None or current.conversation is None:
            self.inner.keep_history(memory, old, new)
            return
        current.compacted = (old, new)  # the commit step writes it to the store

    async def commit(self, memory: Memory, messages: list[Message]) -> None:
        current = execution()
        if current is None:
            return await self.inner.commit(memory, messages)
        conversation = current.conversation
        compacted = current.compacted
        if conversation is None:  # the run's own memory, which no other run reads
            await DBOS.run_step_async(
                {"name": COMMIT_STEP}, _as_step_body, lambda: self.inner.commit(memory, messages)
            )
            return
        begun, done = DBOS.reserve_step(), DBOS.reserve_step()
        recorded = await current.recorded()
        again = begun.step_id in recorded and done.step_id not in recorded

        async def begin() -> int:
            return len(messages)

        async def append() -> None:
            await _as_step_body(
                lambda: conversation.append(self.inner, messages, again=again, compacted=compacted)
            )

        await begun.run_async({"name": COMMIT_BEGUN_STEP}, begin)
        await done.run_async({"name": COMMIT_STEP}, append)

    async def hold(
        self, tools: ModuleDict, call: ToolInvocation, ctx: RunContext[Any]
    ) -> str | None:
        current = execution()
        if current is None or _idempotent(tools, call):
            return await self.inner.hold(tools, call, ctx)
        begun, done = DBOS.reserve_step(), DBOS.reserve_step()
        current.reserved[id(call)] = (call, begun, done)
        recorded = await current.recorded()
        if begun.step_id in recorded and done.step_id not in recorded:
            return OUTCOME_UNKNOWN
        return await self.inner.hold(tools, call, ctx)

    async def run_tool_call(
        self,
        tools: ModuleDict,
        call: ToolInvocation,
        ctx: RunContext[Any],
        default_timeout: float | None,
    ) -> ToolCallRecord:
        current = execution()

        def work() -> Awaitable[ToolCallRecord]:
            return self.inner.run_tool_call(tools, call, ctx, default_timeout)

        if current is None:
            return await work()
        if _idempotent(tools, call):
            return await DBOS.run_step_async({"name": TOOL_STEP}, _as_step_body, work)
        held = current.reserved.pop(id(call), None)
        begun, done = (held[1], held[2]) if held else (DBOS.reserve_step(), DBOS.reserve_step())
        fresh: list[bool] = []

        async def begin() -> str:
            fresh.append(True)
            return call.name

        async def once() -> ToolCallRecord:
            if not fresh:  # it began in an execution that stopped before it finished
                return _not_run_again(call)
            return await _as_step_body(work)

        await begun.run_async({"name": TOOL_BEGUN_STEP}, begin)
        return await done.run_async({"name": TOOL_STEP}, once)


def _recorded_verdict(guards: Sequence[Guardrail], outcome: GuardOutcome) -> dict[str, Any]:
    """What a check's step records of one outcome: which of the check's guardrails (its
    position among them and its name) decided what."""
    position = next(i for i, guard in enumerate(guards) if guard is outcome.guard)
    verdict = outcome.verdict
    return {
        "guard": position,
        "name": outcome.guard.name,
        "action": verdict.action,
        "reason": verdict.reason,
        "text": verdict.text,
        "stop": verdict.stop,
    }


def _replayed_verdict(
    current: Execution, guards: Sequence[Guardrail], recorded: dict[str, Any]
) -> GuardOutcome:
    """A recorded outcome, given back its guardrail; one that no longer fits the agent's
    guardrails (they changed under a run still to be recovered) raises."""
    position, name = recorded["guard"], recorded["name"]
    if not 0 <= position < len(guards) or guards[position].name != name:
        names = ", ".join(repr(guard.name) for guard in guards)
        raise DurableInputMismatch(
            f"The durable run {current.workflow_id!r} recorded a verdict of the guardrail "
            f"{name!r} at this check, where the agent now has {names}: the agent's guardrails "
            "changed under a run that was still to be recovered. Recover it with the agent it "
            "ran with (pin application_version and change it with the agent)."
        )
    verdict = Verdict(recorded["action"], recorded["reason"], recorded["text"], recorded["stop"])
    return GuardOutcome(guards[position], verdict)


def _idempotent(tools: ModuleDict, call: ToolInvocation) -> bool:
    tool = tools.get(call.name)
    return not isinstance(tool, Tool) or tool.idempotent


def _not_run_again(call: ToolInvocation) -> ToolCallRecord:
    """The record of a non-idempotent call that a crash interrupted after it had been approved:
    the model is told, rather than the call running twice."""
    entry = ToolCallRecord(call.id, call.name, call.arguments)
    entry.error = (
        f"The call to {call.name} was interrupted (the run stopped while it was running) and "
        "its outcome is unknown; it was not run again because it is not idempotent. Check "
        "whether it took effect before calling it again."
    )
    return entry
