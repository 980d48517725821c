"""The errors a paused run raises: its own pause, out of `agent(...)`, and a sub-agent's pause,
out of the run that called it."""

from __future__ import annotations

from ...errors import ApprovalRequired, SubAgentPaused
from ..events import NeedsApproval
from ..run_result import RunResult
from .agent import LoopAgent

__all__ = ["paused_error", "sub_agent_paused"]


def paused_error(agent: LoopAgent, outcome: NeedsApproval) -> ApprovalRequired:
    """What `agent(...)` raises for a run of `agent` that paused: it has no output to return."""
    result: RunResult[None] = RunResult(
        None, outcome.record, "needs_approval", outcome.pending, outcome.state
    )
    calls = ", ".join(f"{p.tool} (id {p.id!r})" for p in outcome.pending)
    return ApprovalRequired(
        f"{agent._where()} paused before running {calls}: the tool asks for a person's "
        "approval. `agent(...)` cannot return an answer for a paused run; call "
        "`result = await agent.run(...)`, show `result.pending` to a person, then "
        "`await agent.run(resume=result.state, approvals={id: True | False | 'reason'})`.",
        result=result,
    )


def sub_agent_paused(
    agent: LoopAgent, paused: ApprovalRequired, tool: str | None
) -> SubAgentPaused:
    """What `agent` raises when an agent it called (as the tool `tool`, or from inside its run)
    paused: a paused sub-agent cannot be resumed through its caller's run."""
    state = getattr(paused.result, "state", None)
    who = f"The agent at {state.agent!r}" if state is not None else "A sub-agent"
    how = f"called as the tool {tool!r}" if tool is not None else "called"
    return SubAgentPaused(
        f"{who}, {how} inside {agent._where()}, paused for tool approval. A paused sub-agent "
        "cannot be resumed through its parent's run: give the tool that needs approval to the "
        "outer agent, or run the sub-agent yourself with `sub_agent.run(...)`.",
        result=paused.result,
        tool=tool,
    )
