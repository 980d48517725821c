"""Durable runs in one process, on real DBOS and SQLite, against the fake OpenAI server: the
result equals a plain run's, streaming works for both agent types, approvals wait in the
workflow and may come from another process, usage and spans see a durable run as a plain one,
and bad input raises named errors."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS
from durable_support import REACH_BOUND, configure, dbos_db, system_db
from fake_llm import make_llm
from locations import SUPPORT

from promptimus import track_usage
from promptimus.agents.events import FinalResult, NeedsApproval, TextDelta, ToolCallEvent
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.durable import DurableAgent
from promptimus.errors import (
    ApprovalRequired,
    DurableApprovalError,
    DurableInputMismatch,
    DurableRunNotFound,
    DurableSetupError,
    InvalidArgument,
    InvalidWorkflowId,
    MaxIterExceeded,
)
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools.tool import Tool

__all__ = ["dbos_db", "system_db"]


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


class Ledger:
    """Tools that note what really ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, Any]] = []

    def tools(self, *, refund_approval: bool = False) -> list[Tool]:
        def lookup(order: int) -> str:
            """Look an order up."""
            self.ran.append(("lookup", order))
            return f"order {order}: 30 EUR"

        def refund(order: int) -> str:
            """Refund an order."""
            self.ran.append(("refund", order))
            return f"refunded {order}"

        return [Tool(lookup), Tool(refund, requires_approval=refund_approval, idempotent=False)]


def refund_script() -> list[Any]:
    return [
        Reply(tool_calls=[ToolCall("lookup", {"order": 42}, id="c1")]),
        Reply(tool_calls=[ToolCall("refund", {"order": 42}, id="c2")]),
        "Refunded 30 EUR for order 42.",
    ]


def native(srv: FakeOpenAIServer, tools: list[Tool]) -> OpenaiToolCallingAgent:
    return OpenaiToolCallingAgent("You handle refunds.", tools, max_steps=5).with_llm(make_llm(srv))


async def test_a_durable_run_returns_what_a_plain_run_returns(
    system_db: Path | str, srv: FakeOpenAIServer
) -> None:
    plain_ledger, durable_ledger = Ledger(), Ledger()
    srv.chat.script(*refund_script())
    plain = await native(srv, plain_ledger.tools()).run("Refund order 42")

    configure(system_db)
    agent = native(srv, durable_ledger.tools())
    durable = DurableAgent(agent, name="refunds")
    DBOS.launch()
    srv.chat.script(*refund_script())
    result = await durable.run("Refund order 42", workflow_id="t-42")

    assert result.status == "completed"
    assert result.output == plain.output
    assert durable_ledger.ran == plain_ledger.ran == [("lookup", 42), ("refund", 42)]
    assert list(agent.memory.data) == []  # the worker's memory is no run's conversation
    assert len(result.record.steps) == len(plain.record.steps) == 3
    assert result.record.usage == plain.record.usage
    # joining the finished run by its id sends nothing and runs nothing again
    sent = len(srv.chat.requests)
    again = await durable.run("Refund order 42", workflow_id="t-42")
    assert again.output == result.output
    assert (len(srv.chat.requests), len(durable_ledger.ran)) == (sent, 2)
    assert (await durable.result("t-42")).output == result.output


@pytest.mark.parametrize("kind", ["native", "react"])
async def test_streaming_a_durable_run_yields_the_agents_events(
    dbos_db: Path, srv: FakeOpenAIServer, kind: str
) -> None:
    ledger = Ledger()
    if kind == "native":
        agent: Any = native(srv, ledger.tools())
        srv.chat.script(
            Reply(tool_calls=[ToolCall("lookup", {"order": 7})]), "Order 7 costs 30 EUR."
        )
    else:
        agent = ToolCallingAgent(ledger.tools(), max_steps=4).with_llm(make_llm(srv))
        srv.chat.script(
            'Thought: look\nAction: lookup\nAction Input: {"order": 7}',
            "Answer: Order 7 costs 30 EUR.",
        )
    configure(dbos_db)
    durable = DurableAgent(agent, name=f"stream-{kind}")
    DBOS.launch()

    events = [event async for event in durable.stream("What does order 7 cost?", workflow_id="s")]

    final = events[-1]
    assert isinstance(final, FinalResult)
    text = final.output if isinstance(final.output, str) else final.output.content
    assert "Order 7 costs 30 EUR." in text
    assert [e.name for e in events if isinstance(e, ToolCallEvent)] == ["lookup"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta))
    assert ledger.ran == [("lookup", 7)]
    assert all(body.get("stream") for body in srv.chat.requests)
    # the run is a durable one: its result is in the database
    assert (await durable.result("s")).output == final.output
    # streaming a finished run again yields its outcome only, sending nothing
    sent = len(srv.chat.requests)
    again = [e async for e in durable.stream("What does order 7 cost?", workflow_id="s")]
    assert [type(e) for e in again] == [FinalResult]
    assert len(srv.chat.requests) == sent


async def test_an_approved_call_runs_once_and_the_run_completes(
    system_db: Path | str, srv: FakeOpenAIServer
) -> None:
    ledger = Ledger()
    configure(system_db)
    durable = DurableAgent(native(srv, ledger.tools(refund_approval=True)), name="refunds")
    DBOS.launch()
    srv.chat.script(*refund_script())

    paused = await durable.run("Refund order 42", workflow_id="t-42")
    assert paused.status == "needs_approval"
    assert [(p.id, p.tool, p.arguments, p.reason) for p in paused.pending] == [
        ("c2", "refund", {"order": 42}, None)
    ]
    assert ledger.ran == [("lookup", 42)]
    assert (await durable.result("t-42")).status == "needs_approval"  # it never blocks
    with pytest.raises(ApprovalRequired, match=r"durable\.approve\(workflow_id") as caught:
        _ = paused.output  # says how a durable run goes on: approve, not agent.run(resume=)
    assert "resume=" not in str(caught.value)

    await durable.approve("t-42", "c2", True)
    await durable.approve("t-42", "c2", True)  # the same decision again changes nothing
    result = await durable.result("t-42")
    assert result.output.content == "Refunded 30 EUR for order 42."
    assert ledger.ran == [("lookup", 42), ("refund", 42)]
    await durable.approve("t-42", "c2", True)  # still nothing, after the run completed
    with pytest.raises(DurableApprovalError, match="already decided"):
        await durable.approve("t-42", "c2", False)
    with pytest.raises(DurableApprovalError, match="not paused"):
        await durable.approve("t-42", "c1", True)


async def test_a_denied_call_is_not_run_and_the_model_reads_the_reason(
    dbos_db: Path, srv: FakeOpenAIServer
) -> None:
    ledger = Ledger()
    configure(dbos_db)
    durable = DurableAgent(native(srv, ledger.tools(refund_approval=True)), name="refunds")
    DBOS.launch()
    srv.chat.script(*refund_script()[:2], "I could not refund it.")

    paused = await durable.run("Refund order 42", workflow_id="t-42")
    with pytest.raises(DurableApprovalError, match=r"no pending call 'nope'.*'c2'"):
        await durable.approve("t-42", "nope", True)
    await durable.approve("t-42", paused.pending[0].id, "over the refund limit")
    with pytest.raises(DurableApprovalError, match="already decided"):
        await durable.approve("t-42", "c2", True)
    result = await durable.result("t-42")

    assert result.output.content == "I could not refund it."
    assert ledger.ran == [("lookup", 42)]
    tool_messages = [m for m in srv.chat.requests[-1]["messages"] if m["role"] == "tool"]
    assert "over the refund limit" in tool_messages[-1]["content"]
    assert result.record.steps[1].tool_calls[0].approval == "denied"


APPROVER = textwrap.dedent(
    """
    import asyncio, sys
    from dbos import DBOS
    from durable_crash_worker import dbos_config
    from promptimus.agents.openai_agent import OpenaiToolCallingAgent
    from promptimus.durable import DurableAgent
    from promptimus.tools.tool import Tool

    def lookup(order: int) -> str:
        "Look an order up."
    def refund(order: int) -> str:
        "Refund an order."

    async def main():
        tools = [Tool(lookup), Tool(refund, requires_approval=True, idempotent=False)]
        agent = OpenaiToolCallingAgent("You handle refunds.", tools, max_steps=5)
        DBOS(config=dbos_config(sys.argv[1], executor_id="approver"))
        durable = DurableAgent(agent, name="refunds")
        DBOS.launch()
        try:
            await durable.approve("t-42", "c2", True)
        finally:
            DBOS.destroy()
        print("approved", flush=True)

    asyncio.run(main())
    """
)


async def test_a_paused_run_waits_durably_and_another_process_approves_it(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer
) -> None:
    ledger = Ledger()
    configure(dbos_db)
    durable = DurableAgent(native(srv, ledger.tools(refund_approval=True)), name="refunds")
    DBOS.launch()
    srv.chat.script(*refund_script())
    paused = await durable.run("Refund order 42", workflow_id="t-42")
    assert paused.status == "needs_approval"

    tests = SUPPORT  # the approver imports the durable test helpers by module name
    approver = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        APPROVER,
        str(dbos_db),
        cwd=tests,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(tests)},
    )
    out, err = await asyncio.wait_for(approver.communicate(), REACH_BOUND)
    assert approver.returncode == 0, err.decode()[-3000:]
    assert out.decode().split() == ["approved"]

    result = await durable.result("t-42")
    assert result.output.content == "Refunded 30 EUR for order 42."
    assert ledger.ran == [("lookup", 42), ("refund", 42)]


async def test_usage_and_spans_see_a_durable_run_as_a_plain_one(
    dbos_db: Path, srv: FakeOpenAIServer, exporter: Any
) -> None:
    srv.chat.script(*refund_script())
    with track_usage() as plain_usage:
        await native(srv, Ledger().tools()).run("Refund order 42")
    plain_spans = sorted(span.name for span in exporter.get_finished_spans())
    exporter.clear()

    configure(dbos_db)
    durable = DurableAgent(native(srv, Ledger().tools()), name="refunds")
    DBOS.launch()
    srv.chat.script(*refund_script())
    with track_usage() as durable_usage:
        await durable.run("Refund order 42")

    assert durable_usage.total == plain_usage.total
    assert durable_usage.total.requests == 3
    assert sorted(span.name for span in exporter.get_finished_spans()) == plain_spans


async def test_a_run_that_fails_raises_its_error_from_run_and_result(
    dbos_db: Path, srv: FakeOpenAIServer
) -> None:
    configure(dbos_db)
    agent = OpenaiToolCallingAgent("p", Ledger().tools(), max_steps=1).with_llm(make_llm(srv))
    durable = DurableAgent(agent, name="looping")
    DBOS.launch()
    srv.chat.script(Reply(tool_calls=[ToolCall("lookup", {"order": 1})]))
    with pytest.raises(MaxIterExceeded):
        await durable.run("loop", workflow_id="bad")
    with pytest.raises(MaxIterExceeded):
        await durable.result("bad")


# ------------------------------------------------------------------ bad input


async def test_a_workflow_id_reused_with_another_input_raises_a_named_error(
    dbos_db: Path, srv: FakeOpenAIServer
) -> None:
    configure(dbos_db)
    durable = DurableAgent(native(srv, []), name="chat")
    other = DurableAgent(native(srv, []), name="other")
    DBOS.launch()
    srv.chat.script("One.")
    await durable.run("first", workflow_id="w")
    sent = len(srv.chat.requests)
    with pytest.raises(DurableInputMismatch, match="'w' already names a durable run with another"):
        await durable.run("second", workflow_id="w")
    with pytest.raises(DurableInputMismatch, match="another"):
        await durable.run("first", workflow_id="w", tone="formal")
    with pytest.raises(DurableInputMismatch, match="another durable agent, not of 'other'"):
        await other.run("first", workflow_id="w")
    assert len(srv.chat.requests) == sent


async def test_a_durable_agent_created_after_launch_is_refused_with_what_to_do(
    dbos_db: Path, srv: FakeOpenAIServer
) -> None:
    configure(dbos_db)
    DurableAgent(native(srv, []), name="first")
    DBOS.launch()
    with pytest.raises(
        DurableSetupError, match=r"after DBOS.launch\(\).*Create the DurableAgent first"
    ):
        DurableAgent(native(srv, []), name="late")


async def test_setup_mistakes_raise_named_errors(dbos_db: Path, srv: FakeOpenAIServer) -> None:
    with pytest.raises(InvalidArgument, match="tool-calling agent"):
        DurableAgent(object(), name="x")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="name"):
        DurableAgent(native(srv, []), name="has space")
    with pytest.raises(InvalidArgument, match="concurrency"):
        DurableAgent(native(srv, []), name="x", concurrency=0)
    durable = DurableAgent(native(srv, []), name="chat")
    with pytest.raises(DurableSetupError, match="already exists"):
        DurableAgent(native(srv, []), name="chat")
    with pytest.raises(DurableSetupError, match="needs DBOS"):
        await durable.run("hi")
    configure(dbos_db)
    with pytest.raises(DurableSetupError, match=r"DBOS.launch\(\) first"):
        await durable.run("hi")
    DBOS.launch()
    with pytest.raises(DurableRunNotFound, match="'missing'"):
        await durable.result("missing")
    with pytest.raises(DurableRunNotFound, match="'missing'"):
        await durable.approve("missing", "c1")
    with pytest.raises(InvalidArgument, match="must pickle"):
        await durable.run("hi", deps=lambda: None)
    with pytest.raises(InvalidArgument, match="approved must be"):
        await durable.approve("missing", "c1", 1)  # type: ignore[arg-type]


async def test_a_paused_stream_ends_with_needs_approval(
    dbos_db: Path, srv: FakeOpenAIServer
) -> None:
    ledger = Ledger()
    configure(dbos_db)
    durable = DurableAgent(native(srv, ledger.tools(refund_approval=True)), name="refunds")
    DBOS.launch()
    srv.chat.script(*refund_script())
    events = [e async for e in durable.stream("Refund order 42", workflow_id="t")]
    assert isinstance(events[-1], NeedsApproval)
    assert [p.id for p in events[-1].pending] == ["c2"]
    await durable.approve("t", "c2", True)
    assert (await durable.result("t")).output.content == "Refunded 30 EUR for order 42."


async def test_enqueued_runs_complete_with_at_most_the_queues_concurrency_at_once(
    system_db: Path | str, srv: FakeOpenAIServer
) -> None:
    configure(system_db)
    durable = DurableAgent(native(srv, []), name="queued", concurrency=1)
    DBOS.launch()
    srv.latency = 0.05  # each reply takes a while, so runs that overlap would show it
    srv.chat.respond_with(lambda body: Reply(content=f"re: {body['messages'][-1]['content']}"))

    ids = [await durable.enqueue(f"ticket {n}", workflow_id=f"q-{n}") for n in range(4)]
    results = [await durable.result(workflow_id) for workflow_id in ids]

    assert [r.output.content for r in results] == [f"re: ticket {n}" for n in range(4)]
    assert len(srv.chat.requests) == 4
    assert srv.max_in_flight == 1
    with pytest.raises(DurableInputMismatch):
        await durable.enqueue("another ticket", workflow_id="q-0")


@pytest.mark.parametrize(
    "workflow_id",
    ["\ud800", "   ", "a\x00b", "x" * 1_000_000, "t-42/approval/1/c2"],
    ids=["lone-surrogate", "blank", "nul", "one-megabyte", "approval-separator"],
)
async def test_a_workflow_id_no_run_can_have_is_refused_before_dbos_sees_it(
    system_db: Path | str, srv: FakeOpenAIServer, workflow_id: str
) -> None:
    configure(system_db)
    durable = DurableAgent(native(srv, []), name="chat")
    DBOS.launch()
    srv.chat.script("hi")
    with pytest.raises(InvalidWorkflowId, match="workflow_id"):
        await durable.run("hi", workflow_id=workflow_id)
    with pytest.raises(InvalidWorkflowId, match="workflow_id"):
        await durable.enqueue("hi", workflow_id=workflow_id)
    with pytest.raises(InvalidWorkflowId, match="workflow_id"):
        await durable.result(workflow_id)
    with pytest.raises(InvalidWorkflowId, match="workflow_id"):
        await durable.approve(workflow_id, "c1")
    with pytest.raises(InvalidWorkflowId, match="workflow_id"):
        [event async for event in durable.stream("hi", workflow_id=workflow_id)]
    assert await DBOS.list_workflows_async() == []
    assert srv.chat.requests == []


async def test_no_run_can_take_the_id_of_another_runs_decision(
    system_db: Path | str, srv: FakeOpenAIServer
) -> None:
    ledger = Ledger()
    configure(system_db)
    durable = DurableAgent(native(srv, ledger.tools(refund_approval=True)), name="refunds")
    DBOS.launch()
    srv.chat.script(*refund_script())
    paused = await durable.run("Refund order 42", workflow_id="t-42")
    assert [p.id for p in paused.pending] == ["c2"]

    with pytest.raises(InvalidWorkflowId, match="/approval"):
        await durable.enqueue("Refund order 42", workflow_id="t-42/approval/1/c2")
    await durable.approve("t-42", "c2", True)
    result = await durable.result("t-42")
    assert result.output.content == "Refunded 30 EUR for order 42."
    assert ledger.ran == [("lookup", 42), ("refund", 42)]


@pytest.mark.parametrize(
    "options",
    [
        {"poll_interval": float("inf")},
        {"poll_interval": float("nan")},
        {"poll_interval": "0.1"},
        {"poll_interval": 0},
        {"poll_interval": True},
        {"concurrency": True},
        {"concurrency": 1.5},
        {"concurrency": "2"},
        {"worker_concurrency": True},
        {"worker_concurrency": 0},
        {"store": "sessions.db"},
    ],
    ids=repr,
)
def test_a_durable_agents_numbers_are_checked_where_they_are_given(
    dbos_db: Path, srv: FakeOpenAIServer, options: dict[str, Any]
) -> None:
    (name,) = options
    with pytest.raises(InvalidArgument, match=name):
        DurableAgent(native(srv, []), name="chat", **options)
