"""Running one reply's tool calls: concurrently, at most `max_tool_concurrency` of the agent's at
once and `max_tool_calls_per_step` of one reply, each through `agent.executor`, their records
kept in request order and their events shown as each finishes."""

from __future__ import annotations

import asyncio
from typing import Any

from ...core import ModuleDict
from ...dto.run_record import ToolCallRecord
from ...errors import ApprovalRequired, SubAgentPaused
from ...tools.run_context import RunContext
from ..run_tools import offered_tools
from .active_run import Emit, tool_event
from .agent import LoopAgent
from .decisions import ToolInvocation
from .pause_errors import sub_agent_paused

__all__ = ["execute_tools", "server_of"]


async def execute_tools(
    agent: LoopAgent, calls: list[ToolInvocation], ctx: RunContext[Any], emit: Emit | None
) -> list[ToolCallRecord]:
    """Run `calls` (of step `ctx.step`) and return their records in request order. Calls past
    `max_tool_calls_per_step` are not run: each gets an error record telling the model to make
    it in a later step. A sub-agent that pauses inside a call fails the run (`SubAgentPaused`)."""
    refused: list[ToolCallRecord] = []
    cap = agent.max_tool_calls_per_step
    if cap is not None and len(calls) > cap:
        refused = [_refused(call, cap) for call in calls[cap:]]
        calls = calls[:cap]
        if emit is not None:
            for entry in refused:
                emit(tool_event(entry, ctx.step))
    try:
        records = await _run_calls(agent, calls, ctx, emit)
    except SubAgentPaused:
        raise
    except ApprovalRequired as paused:
        names = {call.name for call in calls}
        tool = names.pop() if len(names) == 1 else None
        raise sub_agent_paused(agent, paused, tool) from paused
    records.extend(refused)
    return records


async def _run_calls(
    agent: LoopAgent, calls: list[ToolInvocation], ctx: RunContext[Any], emit: Emit | None
) -> list[ToolCallRecord]:
    run_tool_call = agent.executor.run_tool_call
    timeout, slots = agent.tool_timeout, agent._tool_slots
    offered = {t.name: t for t in offered_tools(agent) if t.name not in agent.tools}
    extra = ModuleDict(offered) if offered else None

    def table(call: ToolInvocation) -> ModuleDict:
        """The tools a call is looked up in: the agent's own, or those offered to its run."""
        return extra if extra is not None and call.name in offered else agent.tools

    semaphore = slots.for_run()
    if len(calls) == 1:
        tools = table(calls[0])
        if semaphore is None:
            entry = await run_tool_call(tools, calls[0], ctx, timeout)
        else:
            entry = await slots.run(semaphore, run_tool_call, tools, calls[0], ctx, timeout)
        if emit is not None:
            emit(tool_event(entry, ctx.step))
        return [entry]
    if not calls:
        return []
    tasks = [
        asyncio.ensure_future(
            run_tool_call(table(call), call, ctx, timeout)
            if semaphore is None
            else slots.run(semaphore, run_tool_call, table(call), call, ctx, timeout)
        )
        for call in calls
    ]
    try:
        for finished in asyncio.as_completed(tasks):
            entry = await finished
            if emit is not None:
                emit(tool_event(entry, ctx.step))
    finally:
        for task in tasks:
            task.cancel()
    return [task.result() for task in tasks]


def _refused(call: ToolInvocation, cap: int) -> ToolCallRecord:
    entry = ToolCallRecord(call.id, call.name, call.arguments)
    entry.error = (
        f"Not run: at most {cap} tool calls run per step (max_tool_calls_per_step) and this "
        f"one came after them. Call {call.name} again in a later step if you still need it."
    )
    return entry


def server_of(agent: LoopAgent, name: str) -> str | None:
    """The server the named tool runs on (None for a local or an unknown tool)."""
    tool = agent._tool(name)
    return tool.server if tool is not None else None
