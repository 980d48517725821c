"""A tool call waiting for approval, through the AG-UI endpoint on a real uvicorn server: the run
ends with an interrupt (validated with `ag-ui-protocol`'s models), the client's next request
answers it (approve or deny), and the paused run goes on from the stored conversation. The
OpenAI face still answers 409 for such a call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui.core import RunFinishedEvent, RunFinishedInterruptOutcome, ToolCallResultEvent
from ag_ui_client import Answer, post, run_input, user
from serve_support import Running, serving

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import Message
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.sessions import SQLiteSessionStore
from promptimus.tools import Tool

S = ScriptedLLM
BOOKED: list[str] = []


def book(room: str) -> str:
    """Books a room."""
    BOOKED.append(room)
    return f"booked {room}"


def last_tool_result(history: list[Message], kwargs: dict[str, Any]) -> str:
    return "done: " + history[-1].content


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Running, ScriptedLLM, SQLiteSessionStore]]:
    BOOKED.clear()
    llm = S([S.tool_call("book", {"room": "blue"}, id="b1"), last_tool_result, "noted"])
    agent = OpenaiToolCallingAgent("You book rooms.", [Tool(book, requires_approval=True)])
    agent.with_llm(llm)
    store = SQLiteSessionStore(tmp_path / "chats.db")
    with serving(app(agent, store=store)) as running:
        yield running, llm, store
    store.close()


def interrupted(answer: Answer) -> RunFinishedInterruptOutcome:
    finished = answer.of(RunFinishedEvent)
    assert answer.types()[-1] == "RUN_FINISHED" and len(finished) == 1
    outcome = finished[0].outcome
    assert isinstance(outcome, RunFinishedInterruptOutcome)
    return outcome


def answer_to(thread: str, interrupt: str, status: str, payload: Any = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"interruptId": interrupt, "status": status}
    if payload is not None:
        entry["payload"] = payload
    return run_input(thread, user("book the blue room"), resume=[entry])


def test_a_call_waiting_for_approval_is_an_interrupt_then_runs_when_approved(
    served: tuple[Running, ScriptedLLM, SQLiteSessionStore],
) -> None:
    running, llm, store = served
    first = post(running.url, run_input("a", user("book the blue room")))
    types = first.types()
    assert types[:4] == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert "TOOL_CALL_RESULT" not in types
    (interrupt,) = interrupted(first).interrupts
    assert interrupt.reason == "tool_approval" and interrupt.tool_call_id == "b1"
    assert interrupt.metadata == {"toolName": "book", "arguments": {"room": "blue"}}
    assert BOOKED == []
    # a new message while the call waits is refused until it is answered
    busy = post(running.url, run_input("a", user("hello?")))
    assert busy.status == 409 and busy.error is not None
    assert busy.error.code == "interrupt_pending"
    second = post(running.url, answer_to("a", interrupt.id, "resolved", True))
    assert second.status == 200, second.error
    assert BOOKED == ["blue"]
    result = second.of(ToolCallResultEvent)
    assert [(r.tool_call_id, r.content) for r in result] == [("b1", "booked blue")]
    assert second.text() == "done: booked blue"
    assert second.of(RunFinishedEvent)[0].outcome is None
    # the turn is stored whole: the next request goes on from it
    third = post(running.url, run_input("a", user("thanks")))
    assert third.text() == "noted"
    assert [m.content for m in llm.requests[-1][0]][-3:] == [
        "booked blue",
        "done: booked blue",
        "thanks",
    ]
    assert len(running.call(store.load_turns("5:local:a"))) == 2


@pytest.mark.parametrize(
    ("status", "payload", "told"),
    [
        ("resolved", False, "not run."),
        ("resolved", {"approved": False, "reason": "too pricey"}, "Reason: too pricey"),
        ("cancelled", None, "not run."),
    ],
)
def test_a_denied_call_never_runs_and_the_model_is_told(
    served: tuple[Running, ScriptedLLM, SQLiteSessionStore], status: str, payload: Any, told: str
) -> None:
    running, _, _ = served
    (interrupt,) = interrupted(post(running.url, run_input("d", user("book")))).interrupts
    second = post(running.url, answer_to("d", interrupt.id, status, payload))
    assert second.status == 200, second.error
    assert BOOKED == []
    (result,) = second.of(ToolCallResultEvent)
    assert result.tool_call_id == "b1" and result.content.endswith(told)
    assert "The user did not approve" in second.text()


def test_a_paused_run_resumes_once_and_only_for_its_caller(tmp_path: Path) -> None:
    llm = S([S.tool_call("book", {"room": "red"}, id="r1"), last_tool_result])
    agent = OpenaiToolCallingAgent("You book.", [Tool(book, requires_approval=True)])
    tokens = {"alice-token-123": "alice", "bob-token-4567": "bob"}
    BOOKED.clear()
    with serving(app(agent.with_llm(llm), tokens=tokens)) as running:
        first = post(running.url, run_input("t", user("book")), "alice-token-123")
        (interrupt,) = interrupted(first).interrupts
        stranger = post(
            running.url, answer_to("t", interrupt.id, "resolved", True), "bob-token-4567"
        )
        assert stranger.status == 400 and stranger.error is not None
        assert stranger.error.code == "invalid_resume"
        wrong = post(running.url, answer_to("t", "no-such", "resolved", True), "alice-token-123")
        assert wrong.status == 400
        bad = post(running.url, answer_to("t", interrupt.id, "resolved", "yes"), "alice-token-123")
        assert bad.status == 400 and bad.error is not None and bad.error.code == "invalid_resume"
        assert BOOKED == []
        done = post(running.url, answer_to("t", interrupt.id, "resolved", True), "alice-token-123")
        assert done.text() == "done: booked red"
        again = post(running.url, answer_to("t", interrupt.id, "resolved", True), "alice-token-123")
        assert again.status == 400
        assert BOOKED == ["red"]


def test_the_openai_face_still_answers_409_for_a_call_waiting_for_approval(
    served: tuple[Running, ScriptedLLM, SQLiteSessionStore],
) -> None:
    running, _, _ = served
    reply = httpx.post(
        f"{running.url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "book"}]},
    )
    assert reply.status_code == 409
    assert json.loads(reply.text)["error"]["code"] == "approval_required"
    assert BOOKED == []


def test_past_the_limit_the_oldest_paused_run_is_forgotten(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from promptimus.serve import ag_ui

    monkeypatch.setattr(ag_ui, "MAX_PAUSED_RUNS", 2)
    calls = [S.tool_call("book", {"room": f"room{n}"}, id=f"c{n}") for n in range(3)]
    llm = S([*calls, last_tool_result])
    agent = OpenaiToolCallingAgent("You book.", [Tool(book, requires_approval=True)])
    BOOKED.clear()
    with serving(app(agent.with_llm(llm))) as running:
        waiting = [
            interrupted(post(running.url, run_input(f"t{n}", user("book")))).interrupts[0]
            for n in range(3)
        ]
        forgotten = post(running.url, answer_to("t0", waiting[0].id, "resolved", True))
        assert forgotten.status == 400 and forgotten.error is not None
        assert forgotten.error.code == "invalid_resume"
        kept = post(running.url, answer_to("t2", waiting[2].id, "resolved", True))
        assert kept.text() == "done: booked room2"
    assert BOOKED == ["room2"]
