"""The Approvals page: durable runs (`promptimus.durable`) paused on tool calls that wait for a
person's decision, read from the DBOS system database `--dbos`; Approve and Deny deliver the
decision the way `DurableAgent.approve` does (`durable.pause.deliver`: recorded once, sent to
the run), and the run goes on in whichever worker holds it.

The board joins that database as a DBOS process of its own (its own executor id and
application version, so it never recovers a worker's runs) that runs only the small workflow
which delivers a decision.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..agents.run_state import PendingToolCall
from ..errors import DurableApprovalError
from .html import esc, page, table, url

__all__ = ["Waiting", "approvals_page", "decide", "launch", "shutdown", "waiting_runs"]

BOARD_EXECUTOR = "promptimus-board"
_RUN_PREFIX = "promptimus.durable."


def system_database_url(address: str) -> str:
    """A DBOS system database URL; a plain path is a SQLite file."""
    if "://" in address:
        return address
    return f"sqlite:///{address}"


def launch(address: str) -> None:
    """Join the DBOS system database at `address` (before serving)."""
    from dbos import DBOS

    from ..durable.pause import ensure_approval_workflow

    DBOS(
        config={
            "name": "promptimus-board",
            "system_database_url": system_database_url(address),
            "executor_id": BOARD_EXECUTOR,
            "application_version": BOARD_EXECUTOR,
            "log_level": "WARNING",
        }
    )
    ensure_approval_workflow()
    DBOS.listen_queues([])
    DBOS.launch()


def shutdown() -> None:
    from dbos import DBOS

    DBOS.destroy(workflow_completion_timeout_sec=0)


@dataclass(frozen=True, slots=True)
class Waiting:
    workflow_id: str
    agent: str
    round: int
    pending: list[PendingToolCall]
    request: str


async def waiting_runs() -> list[Waiting]:
    """The durable runs paused now on calls no one has decided yet."""
    from dbos import DBOS

    from ..durable.pause import PAUSE_EVENT, Pause, is_decided

    found = []
    # application_name=[]: the runs of every application on this database, not the board's
    listed = await DBOS.list_workflows_async(
        status="PENDING", load_output=False, application_name=[]
    )
    for status in listed:
        name = status.name or ""
        if not name.startswith(_RUN_PREFIX) or name == "promptimus.durable.approval":
            continue
        pause = await DBOS.get_event_async(status.workflow_id, PAUSE_EVENT, timeout_seconds=0)
        if not isinstance(pause, Pause) or not pause.waiting:
            continue
        undecided = [
            call
            for call in pause.pending
            if not await is_decided(status.workflow_id, pause.round, call.id)
        ]
        if undecided:
            given: Any = status.input or {}
            arguments = given.get("args") or ()
            request = arguments[0] if arguments else ""
            found.append(
                Waiting(
                    status.workflow_id,
                    name.removeprefix(_RUN_PREFIX),
                    pause.round,
                    undecided,
                    request if isinstance(request, str) else str(request),
                )
            )
    return found


async def decide(workflow_id: str, call_id: str, approved: bool) -> None:
    """Deliver a decision on a call that waits now; `DurableApprovalError` otherwise."""
    from ..durable.pause import deliver

    for run in await waiting_runs():
        if run.workflow_id == workflow_id and any(c.id == call_id for c in run.pending):
            recorded = await deliver(workflow_id, run.round, call_id, approved)
            if recorded != approved:
                raise DurableApprovalError(
                    f"The call {call_id!r} of {workflow_id!r} was already decided ({recorded!r})."
                )
            return
    raise DurableApprovalError(
        f"The durable run {workflow_id!r} has no call {call_id!r} waiting for a decision."
    )


def _why(call: PendingToolCall) -> str:
    return call.reason or f"the tool {call.tool} requires approval"


async def approvals_page(enabled: bool, csrf: str, note: str = "") -> str:
    if not enabled:
        body = "<p class=empty>Start the board with --dbos URL (the DBOS system database).</p>"
        return page("Approvals", "approvals", body)
    rows = []
    for run in await waiting_runs():
        for call in run.pending:
            action = url("approvals", run.workflow_id, call.id)
            buttons = "".join(
                f'<form method=post action="{action}"><input type=hidden name=csrf '
                f'value="{esc(csrf)}"><input type=hidden name=decision value="{value}">'
                f'<button class="{css}">{label}</button></form>'
                for value, label, css in (("approve", "Approve", "ok"), ("deny", "Deny", "danger"))
            )
            rows.append(
                [
                    f"{esc(run.workflow_id)}<br><small>{esc(run.agent)}</small>",
                    esc(run.request),
                    f"<code>{esc(call.tool)}</code>",
                    f"<pre>{esc(json.dumps(call.arguments, indent=2, ensure_ascii=False))}</pre>",
                    esc(_why(call)),
                    f"<div class=actions>{buttons}</div>",
                ]
            )
    listed = table(
        ["run", "request", "call", "arguments", "why it waits", "decision"],
        rows,
        empty="No durable run waits for a decision.",
    )
    body = f"<p class=note>{esc(note)}</p>" if note else ""
    return page("Approvals", "approvals", f"{body}<div id=live>{listed}</div>", live=True)
