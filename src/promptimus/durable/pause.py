"""A durable run paused for approval: what it publishes while it waits, how it waits (DBOS
`recv`, so the wait survives any number of restarts and needs no process while nothing
happens), and how a decision reaches it from any process.

While paused, the run's workflow holds the DBOS event `PAUSE_EVENT`: the round (the how-manyth
pause of the run), the pending calls and the record so far; once they are decided, the same
pause with `waiting=False` (so a decision repeated late is still recognized). A decision is
delivered by a small workflow of its own, whose id names the run, the round and the call: so a
decision is recorded exactly once, a second one for the same call is recognized, and anyone can
tell which pending calls are decided before the run has read the decisions. No run's id holds
`APPROVAL_SEPARATOR` (`DurableAgent` refuses such ids), so no run can take the id of another
run's decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbos import DBOS, WorkflowHandleAsync

from ..agents.run_state import Approval, PendingToolCall
from ..dto.run_record import RunRecord
from .engine import registered

__all__ = [
    "APPROVAL_SEPARATOR",
    "APPROVAL_WORKFLOW",
    "PAUSE_EVENT",
    "Pause",
    "approval_id",
    "decision",
    "deliver",
    "ensure_approval_workflow",
    "wait_for_decisions",
]

PAUSE_EVENT = "promptimus.pause"
APPROVAL_TOPIC = "promptimus.approval"
APPROVAL_WORKFLOW = "promptimus.durable.approval"
APPROVAL_SEPARATOR = "/approval"
_WAIT_SECONDS = 24 * 3600.0  # one durable wait; the run waits again after each, for ever


@dataclass(frozen=True, slots=True)
class Pause:
    """What a paused durable run publishes (see the module docstring)."""

    round: int
    pending: list[PendingToolCall]
    record: RunRecord
    waiting: bool = True  # False once every pending call was decided and the run went on


def approval_id(workflow_id: str, round_: int, call_id: str) -> str:
    """The id of the workflow that delivers the decision on `call_id` in pause `round_`."""
    return f"{workflow_id}{APPROVAL_SEPARATOR}/{round_}/{call_id}"


async def _deliver(workflow_id: str, message: dict[str, Any]) -> dict[str, Any]:
    await DBOS.send_async(workflow_id, message, topic=APPROVAL_TOPIC)
    return message


_workflow: Any = None


def ensure_approval_workflow() -> None:
    """Register the decision-delivering workflow with DBOS (once per DBOS registry)."""
    global _workflow
    if _workflow is None or not registered(APPROVAL_WORKFLOW):
        _workflow = DBOS.workflow(name=APPROVAL_WORKFLOW)(_deliver)


async def deliver(workflow_id: str, round_: int, call_id: str, decision: Approval) -> Approval:
    """Record the decision on one pending call and send it to the run; the decision recorded
    for that call (an earlier one, when it was already decided)."""
    from dbos import SetWorkflowID

    message = {"round": round_, "id": call_id, "decision": decision}
    with SetWorkflowID(approval_id(workflow_id, round_, call_id)):
        handle = await DBOS.start_workflow_async(_workflow, workflow_id, message)
    delivered: dict[str, Any] = await handle.get_result()
    return delivered["decision"]  # type: ignore[no-any-return]


async def decision(workflow_id: str, round_: int, call_id: str) -> Approval | None:
    """The decision recorded on `call_id` in pause `round_`, None if there is none yet."""
    identity = approval_id(workflow_id, round_, call_id)
    if await DBOS.get_workflow_status_async(identity) is None:
        return None
    handle: WorkflowHandleAsync[dict[str, Any]] = await DBOS.retrieve_workflow_async(identity)
    delivered: dict[str, Any] = await handle.get_result()
    return delivered["decision"]  # type: ignore[no-any-return]


async def is_decided(workflow_id: str, round_: int, call_id: str) -> bool:
    status = await DBOS.get_workflow_status_async(approval_id(workflow_id, round_, call_id))
    return status is not None


async def wait_for_decisions(round_: int, pending: list[PendingToolCall]) -> dict[str, Approval]:
    """Inside the run's workflow: wait (durably) until every pending call has a decision."""
    waiting = {call.id for call in pending}
    decisions: dict[str, Approval] = {}
    while waiting - decisions.keys():
        message = await DBOS.recv_async(APPROVAL_TOPIC, timeout_seconds=_WAIT_SECONDS)
        if (
            isinstance(message, dict)
            and message.get("round") == round_
            and message.get("id") in waiting
        ):
            decisions.setdefault(message["id"], message["decision"])
    return decisions
