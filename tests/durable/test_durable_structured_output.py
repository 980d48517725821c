"""A durable run of an agent whose structured answer comes as a call of the answer tool, beside a
tool call that waits for approval: it pauses, resumes and ends with the validated answer, as a
plain run does."""

from __future__ import annotations

from pathlib import Path

import pytest
from dbos import DBOS
from durable_support import configure, dbos_db, system_db
from fake_llm import make_llm
from pydantic import BaseModel

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.durable import DurableAgent
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools.tool import Tool

__all__ = ["dbos_db", "system_db"]


class Refund(BaseModel):
    order: int
    amount: float


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


async def test_a_durable_run_pauses_and_ends_with_the_answer_tool(
    system_db: Path | str, srv: FakeOpenAIServer
) -> None:
    ran: list[int] = []

    def refund(order: int) -> str:
        """Refund an order."""
        ran.append(order)
        return f"refunded {order}"

    answer = {"order": 42, "amount": 30}
    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("refund", {"order": 42}, id="c1"),
                ToolCall("final_result", answer, id="c2"),
            ]
        ),
        Reply(tool_calls=[ToolCall("final_result", answer, id="c3")]),
    )
    configure(system_db)
    agent = OpenaiToolCallingAgent(
        "You handle refunds.",
        [Tool(refund, requires_approval=True, idempotent=False)],
        structural_output=Refund,
    ).with_llm(make_llm(srv))
    durable = DurableAgent(agent, name="structured-refunds")
    DBOS.launch()

    paused = await durable.run("Refund order 42", workflow_id="s-42")
    assert paused.status == "needs_approval" and [p.tool for p in paused.pending] == ["refund"]
    assert ran == []

    await durable.approve("s-42", "c1", True)
    result = await durable.result("s-42")

    assert result.status == "completed" and result.output == Refund(order=42, amount=30)
    assert ran == [42]
    sent = srv.chat.requests[1]["messages"]
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert results["c1"] == "refunded 42" and results["c2"].startswith("Not taken")
