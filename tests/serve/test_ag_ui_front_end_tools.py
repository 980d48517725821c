"""Front-end tools through the AG-UI endpoint on a real uvicorn server: the tools a client
declares reach the model; a call of one ends the run with the call for the client (events
validated with `ag-ui-protocol`'s models), and the client's result continues the paused run
from the stored conversation. Wrong answers are 4xx, never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ag_ui.core import (
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    ToolCallArgsEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui_client import post, run_input, user
from serve_support import Running, serving

from promptimus.agents import ToolCallingAgent
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import Message
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.sessions import SQLiteSessionStore
from promptimus.tools import Tool

S = ScriptedLLM
CHART = {
    "name": "show_chart",
    "description": "Shows a chart on the user's screen.",
    "parameters": {
        "type": "object",
        "properties": {"kind": {"type": "string"}},
        "required": ["kind"],
    },
}


def on_tool_result(history: list[Message], kwargs: dict[str, Any]) -> str:
    return "shown: " + history[-1].content


def said_before(history: list[Message], kwargs: dict[str, Any]) -> str:
    return " / ".join(m.content for m in history[1:])


def lookup(order: int) -> str:
    """Looks an order up."""
    return f"order {order}"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Running, ScriptedLLM, SQLiteSessionStore]]:
    llm = S([S.tool_call("show_chart", {"kind": "bar"}, id="f1"), on_tool_result, said_before])
    agent = OpenaiToolCallingAgent("You show charts.", [lookup]).with_llm(llm)
    store = SQLiteSessionStore(tmp_path / "chats.db")
    with serving(app(agent, store=store)) as running:
        yield running, llm, store
    store.close()


CALLED = {
    "id": "a1",
    "role": "assistant",
    "toolCalls": [
        {"id": "f1", "type": "function", "function": {"name": "show_chart", "arguments": "{}"}}
    ],
}


def result(call: str, content: str) -> dict[str, Any]:
    return {"id": f"t-{call}", "role": "tool", "toolCallId": call, "content": content}


def test_a_front_end_tool_call_goes_to_the_client_and_its_result_continues_the_run(
    served: tuple[Running, ScriptedLLM, SQLiteSessionStore],
) -> None:
    running, llm, store = served
    first = post(running.url, run_input("f", user("chart it"), tools=[CHART]))
    offered = {t["function"]["name"]: t["function"] for t in llm.requests[0][1]["tools"]}
    assert set(offered) == {"lookup", "show_chart"}
    assert offered["show_chart"]["parameters"] == CHART["parameters"]
    assert offered["show_chart"]["description"] == CHART["description"]
    types = first.types()
    assert types == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "RUN_FINISHED",
    ]
    start = first.of(ToolCallStartEvent)[0]
    assert (start.tool_call_id, start.tool_call_name) == ("f1", "show_chart")
    assert json.loads(first.of(ToolCallArgsEvent)[0].delta) == {"kind": "bar"}
    outcome = first.of(RunFinishedEvent)[0].outcome
    assert isinstance(outcome, RunFinishedSuccessOutcome)
    assert outcome.pending_tool_call_ids == ["f1"]
    assert running.call(store.load_turns("5:local:f")) == []

    messages = [user("chart it"), CALLED, result("f1", "a bar chart is on screen")]
    second = post(running.url, run_input("f", *messages, tools=[CHART]))
    assert second.status == 200, second.error
    assert second.text() == "shown: a bar chart is on screen"
    assert second.of(ToolCallResultEvent) == []  # the client has its own result
    assert second.of(RunFinishedEvent)[0].outcome is None
    # the whole turn is stored: the model sees it on the next request
    reply = {"id": "a2", "role": "assistant", "content": second.text()}
    third = post(running.url, run_input("f", *messages, reply, user("and now?"), tools=[CHART]))
    assert third.text() == (
        "chart it /  / a bar chart is on screen / shown: a bar chart is on screen / and now?"
    )
    assert len(running.call(store.load_turns("5:local:f"))) == 2


def test_a_wrong_answer_is_refused_and_the_call_still_waits(
    served: tuple[Running, ScriptedLLM, SQLiteSessionStore],
) -> None:
    running, _, _ = served
    assert post(running.url, run_input("w", user("chart it"), tools=[CHART])).status == 200
    stray = post(running.url, run_input("w", CALLED, result("never-made", "x"), tools=[CHART]))
    assert stray.status == 400 and stray.error is not None
    assert stray.error.code == "invalid_tool_result"
    busy = post(running.url, run_input("w", user("hello?"), tools=[CHART]))
    assert busy.status == 409 and busy.error is not None
    assert busy.error.code == "interrupt_pending"
    # the tools may be left out of the answering request: the paused run keeps them
    done = post(running.url, run_input("w", CALLED, result("f1", "shown")))
    assert done.text() == "shown: shown"
    again = post(running.url, run_input("w", CALLED, result("f1", "shown")))
    assert again.status == 400 and again.error is not None
    assert again.error.code == "invalid_tool_result"


@pytest.mark.parametrize(
    "tools",
    [
        [{"name": "lookup", "description": "the agent's own name"}],
        [{"name": "not a name!", "description": "x"}],
        [{"name": "ok", "description": 5}],
    ],
)
def test_a_client_tool_the_model_cannot_have_is_400(
    served: tuple[Running, ScriptedLLM, SQLiteSessionStore], tools: list[dict[str, Any]]
) -> None:
    running, llm, _ = served
    answer = post(running.url, run_input("bad", user("hi"), tools=tools))
    assert answer.status == 400 and answer.error is not None
    assert answer.error.code in {"invalid_tools", "invalid_input"}
    assert llm.requests == []


def test_a_text_protocol_agents_call_has_an_id_the_client_can_answer() -> None:
    """A ReACT agent's calls carry no id: the call is sent as `call_<step>_<position>`, the
    id the paused run knows it by, and the answer to that id reaches the model."""
    llm = S(
        [
            'Thought: show it\nAction: show_chart\nAction Input: {"kind": "pie"}',
            lambda history, kwargs: "Thought: done\nAnswer: saw " + history[-1].content,
        ]
    )
    agent = ToolCallingAgent("You show charts.").with_llm(llm)
    with serving(app(agent)) as running:
        first = post(running.url, run_input("r", user("chart it"), tools=[CHART]))
        (start,) = first.of(ToolCallStartEvent)
        outcome = first.of(RunFinishedEvent)[0].outcome
        assert isinstance(outcome, RunFinishedSuccessOutcome)
        assert outcome.pending_tool_call_ids == [start.tool_call_id] == ["call_0_0"]
        answer = result("call_0_0", "a pie chart")
        second = post(running.url, run_input("r", CALLED, answer, tools=[CHART]))
        assert second.status == 200, second.error
        assert second.of(ToolCallResultEvent) == []
        assert "a pie chart" in second.text()


def pay(amount: int) -> str:
    """Pays an amount."""
    return f"paid {amount}"


def test_one_reply_with_a_front_end_call_and_a_call_waiting_for_approval() -> None:
    """The run ends with the interrupt; the next request must answer both, and then both
    results reach the model."""
    both = S.tool_calls(
        S.call("show_chart", {"kind": "line"}, "f1"), S.call("pay", {"amount": 5}, "p1")
    )
    llm = S([both, lambda history, kwargs: " + ".join(m.content for m in history[-2:])])
    agent = OpenaiToolCallingAgent("You pay and chart.", [Tool(pay, requires_approval=True)])
    with serving(app(agent.with_llm(llm))) as running:
        first = post(running.url, run_input("m", user("pay and chart"), tools=[CHART]))
        outcome = first.of(RunFinishedEvent)[0].outcome
        assert isinstance(outcome, RunFinishedInterruptOutcome)
        (interrupt,) = outcome.interrupts
        assert interrupt.tool_call_id == "p1"
        assert [s.tool_call_id for s in first.of(ToolCallStartEvent)] == ["f1", "p1"]
        approve = [{"interruptId": interrupt.id, "status": "resolved", "payload": True}]
        half = post(running.url, run_input("m", user("pay and chart"), resume=approve))
        assert half.status == 400 and half.error is not None
        assert half.error.code == "invalid_tool_result"
        whole = post(running.url, run_input("m", CALLED, result("f1", "line"), resume=approve))
        assert whole.status == 200, whole.error
        assert whole.text() == "line + paid 5"
        assert [r.tool_call_id for r in whole.of(ToolCallResultEvent)] == ["p1"]
