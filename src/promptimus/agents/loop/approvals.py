"""Approvals and pauses: screening a reply's calls for tools that ask a person first, pausing the
run (a `RunState` to resume with), and resuming it: the approved calls run, the denied ones
are answered, and the loop goes on as an uninterrupted run would."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...dto.run_record import ToolCallRecord
from ...errors import InvalidArgument, RunStateConsumed
from ...guardrails.guardrail import ToolGuardrail
from ...tools.run_context import RunContext
from ..events import NeedsApproval
from ..resume_ledger import claim_resume
from ..run_state import Approval, PausedCall, RunState, denial_text
from .active_run import ActiveRun, tool_event
from .agent import LoopAgent
from .decisions import ToolInvocation
from .guarding import screen_tool_call
from .tool_calls import execute_tools, server_of

__all__ = ["ResumePlan", "pause", "plan_resume", "resume_run", "run_screened"]


@dataclass(frozen=True, slots=True)
class ResumePlan:
    """A checked and claimed resume: the paused state and a decision for each pending call."""

    state: RunState
    decisions: dict[str, Approval]


async def plan_resume(
    agent: LoopAgent,
    request: Any,
    resume: RunState | None,
    approvals: Mapping[str, Approval] | None,
    prompt_vars: dict[str, Any],
) -> ResumePlan | None:
    """Check a resume before anything runs, and claim the state (once only); None: a new run."""
    if resume is None:
        if request is None:
            raise InvalidArgument(
                f"{agent._where()}: give a request, or resume=<a paused run's state>."
            )
        if approvals is not None:
            raise InvalidArgument(
                f"{agent._where()}: approvals= only applies with resume=<a paused run's state>."
            )
        return None
    if not isinstance(resume, RunState):
        raise InvalidArgument(
            f"resume= takes the RunState of a paused run (`result.state`, or "
            f"`RunState.from_json(text)`), got {type(resume).__name__}."
        )
    if request is not None:
        raise InvalidArgument(
            f"{agent._where()}: a resumed run continues its own conversation; pass either a "
            "request or resume=, not both."
        )
    resume.check_agent(agent)
    decisions = resume.decisions(approvals)
    # template variables are not saved: a missing one must fail before approved tools run
    agent.predictor.prompt.check_variables(agent._variables(prompt_vars))
    if not await claim_resume(resume.id):
        raise RunStateConsumed(
            f"The paused run {resume.id} was already resumed; a paused run continues once "
            "(its approved tools must not run twice). Use the state of the latest result."
        )
    return ResumePlan(resume, decisions)


async def run_screened(
    run: ActiveRun,
    calls: list[ToolInvocation],
    ctx: RunContext[Any],
    offered: list[str] | None,
    approval: bool,
    tool_guards: Sequence[ToolGuardrail] = (),
) -> tuple[list[ToolCallRecord], list[PausedCall]]:
    """Run the calls a step may run now; answer those to tools not offered at this step and
    those the tool guardrails refuse; hold those waiting for approval. The records (in request
    order) and the held calls."""
    refused: dict[int, ToolCallRecord] = {}
    for position, call in enumerate(calls):  # all screened before any runs
        entry = await screen_tool_call(run, tool_guards, call, ctx.step) if tool_guards else None
        if entry is not None:
            entry.server = server_of(run.agent, call.name)
            refused[position] = entry
    runnable, answered, paused = await _screen(run.agent, calls, ctx, offered, approval, refused)
    if run.emit is not None:
        for entry in answered.values():
            if entry.approval is None:
                run.emit(tool_event(entry, ctx.step))
    ran = iter(await execute_tools(run.agent, runnable, ctx, run.emit))
    records = [answered[p] if p in answered else next(ran) for p in range(len(calls))]
    return records, paused


async def _screen(
    agent: LoopAgent,
    calls: list[ToolInvocation],
    ctx: RunContext[Any],
    offered: list[str] | None,
    approval: bool,
    refused: dict[int, ToolCallRecord],
) -> tuple[list[ToolInvocation], dict[int, ToolCallRecord], list[PausedCall]]:
    """Split a reply's calls into those to run now, those answered without running (`refused`
    by a guardrail, a tool not offered at this step, a call waiting for approval) and the
    paused ones."""
    runnable: list[ToolInvocation] = []
    answered: dict[int, ToolCallRecord] = dict(refused)
    paused: list[PausedCall] = []
    ids: set[str] = set()
    executor = agent.executor if agent.executor.holds_calls else None
    for position, call in enumerate(calls):
        if position in answered:
            continue
        if offered is not None and call.name not in offered:
            names = ", ".join(offered) or "none"
            answered[position] = ToolCallRecord(
                call.id,
                call.name,
                call.arguments,
                error=f"The tool {call.name!r} is not available at this step. Available "
                f"tools: {names}.",
            )
            continue
        reason = None if executor is None else await executor.hold(agent.tools, call, ctx)
        tool = agent._tool(call.name) if approval else None
        if reason is not None or (
            tool is not None
            and tool.may_need_approval
            and await tool.needs_approval(
                call.parsed if call.parsed is not None else call.arguments,
                ctx.for_tool_call(call.id, call.name),
            )
        ):
            key = call.id if call.id and call.id not in ids else f"call_{ctx.step}_{position}"
            ids.add(key)
            answered[position] = ToolCallRecord(
                call.id,
                call.name,
                call.arguments,
                approval="pending",
                server=server_of(agent, call.name),
            )
            paused.append(
                PausedCall(key, position, call.id, call.name, call.arguments, call.parsed, reason)
            )
            continue
        runnable.append(call)
    return runnable, answered, paused


def pause(run: ActiveRun, index: int, paused: list[PausedCall]) -> NeedsApproval:
    """The run stops at step `index`, before `paused`: its state, to resume with."""
    state = run.state
    saved = RunState.new(
        run.agent,
        step=index,
        steps=run.steps,
        conversation=run.conversation,
        keep=run.keep,
        record=run.record,
        paused=paused,
        retries=state.retries,
        rejected=list(state.rejected),
        errors=list(state.errors),
        history=run.history_size,
        compacted_from=run.compacted_from,
    )
    return NeedsApproval(saved.pending, saved, run.record)


async def resume_run(run: ActiveRun, plan: ResumePlan) -> None:
    """Take up the paused run: its conversation, memory gains, steps and record, then finish
    the paused step (the approved calls run, the denied ones are answered)."""
    saved = plan.state
    run.conversation, run.keep, run.steps = list(saved.conversation), list(saved.keep), saved.steps
    run.history_size = saved.history
    run.compacted_from = None if saved.compacted_from is None else list(saved.compacted_from)
    state = run.state
    state.retries, state.rejected, state.errors = (
        saved.retries,
        list(saved.rejected),
        list(saved.errors),
    )
    *earlier, last = saved.record.steps
    run.record.steps.extend([*earlier, dataclasses.replace(last)])
    run.record.guardrails.extend(saved.record.guardrails)  # the verdicts before the pause
    run.record.compactions.extend(saved.record.compactions)
    records = await _finish_paused(run, plan)
    run.observe([ToolInvocation(r.id, r.name, r.arguments) for r in records], records)
    run.step_end(run.record.steps[-1])


async def _finish_paused(run: ActiveRun, plan: ResumePlan) -> list[ToolCallRecord]:
    """Run the approved calls of the paused step and deny the others; the step's records, in
    request order."""
    paused = run.record.steps[-1]
    index = paused.index
    records = list(paused.tool_calls)
    approved: list[tuple[int, ToolInvocation]] = []
    for call in plan.state.paused:
        decision = plan.decisions[call.approval_id]
        if decision is True:
            invocation = ToolInvocation(call.call_id, call.name, call.arguments, call.parsed)
            approved.append((call.position, invocation))
            continue
        denied = ToolCallRecord(call.call_id, call.name, call.arguments, approval="denied")
        denied.server = server_of(run.agent, call.name)
        denied.error = denial_text(call.name, decision)
        records[call.position] = denied
        if run.emit is not None:
            run.emit(tool_event(denied, index))
    if approved:
        ctx = run.tool_context(index)
        ran = await execute_tools(run.agent, [c for _, c in approved], ctx, run.emit)
        for (position, _), entry in zip(approved, ran, strict=True):
            entry.approval = "approved"
            records[position] = entry
    paused.tool_calls = records
    return records
