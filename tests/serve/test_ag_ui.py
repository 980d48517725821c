"""The AG-UI face through a real uvicorn server on 127.0.0.1: every event the server sends is
parsed back and validated with `ag-ui-protocol`'s models (a shape the package refuses fails
the test). Streamed text and reasoning, tools run server-side with their progress, a nested
agent's events, structured output, state, conversations per caller on a real SQLite store,
guardrails, a disconnect, and bad requests in the protocol's error shape."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui.core import (
    CustomEvent,
    ReasoningMessageContentEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    ToolCallArgsEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui_client import Answer, parse_sse, post, run_input, user
from pydantic import BaseModel
from serve_support import Running, serving
from test_openai_compatible import Gate, echo_agent, wait_for

from promptimus.agents.events import CompactionEvent, SubAgentEvent, TextDelta
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.core.module import Module
from promptimus.dto import Message, MessageRole, Usage
from promptimus.guardrails import InputGuardrail, OutputGuardrail, Verdict
from promptimus.llms import OpenAILike
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.serve.ag_ui_events import Translation
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools import RunContext, Tool

S = ScriptedLLM
ALICE, BOB = "alice-token-123", "bob-token-4567"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteSessionStore]:
    store = SQLiteSessionStore(tmp_path / "chats.db")
    yield store
    store.close()


@pytest.fixture
def server(store: SQLiteSessionStore) -> Iterator[Running]:
    with serving(app(echo_agent(), store=store)) as running:
        yield running


def ask(running: Running, thread: str, *texts: str, token: str | None = None) -> Answer:
    return post(running.url, run_input(thread, *(user(t) for t in texts)), token)


def test_text_streams_between_run_started_and_run_finished(server: Running) -> None:
    answer = ask(server, "t1", "tell me a long story please")
    assert answer.status == 200
    types = answer.types()
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert types[1] == "TEXT_MESSAGE_START" and types[-2] == "TEXT_MESSAGE_END"
    assert answer.text() == "heard: tell me a long story please"
    assert len(answer.of(TextMessageContentEvent)) > 1
    started, finished = answer.of(RunStartedEvent)[0], answer.of(RunFinishedEvent)[0]
    assert started.thread_id == finished.thread_id == "t1"
    assert finished.outcome is None and finished.usage and finished.usage[0].output_tokens


def test_a_thread_is_one_conversation(server: Running) -> None:
    assert ask(server, "c", "my name is Ann").text() == "heard: my name is Ann"
    history = [user("my name is Ann"), {"id": "a1", "role": "assistant", "content": "hi"}]
    again = post(server.url, run_input("c", *history, user("who am I?")))
    assert again.text() == "heard: my name is Ann | who am I?"
    assert ask(server, "other", "fresh").text() == "heard: fresh"


def test_reasoning_streams_as_reasoning_events(store: SQLiteSessionStore) -> None:
    reply = Message(role=MessageRole.ASSISTANT, content="It is 4.", reasoning="two and two")
    agent = OpenaiToolCallingAgent("You add.").with_llm(S([reply]))
    with serving(app(agent)) as running:
        answer = ask(running, "r", "2+2?")
    types = answer.types()
    assert types[1:3] == ["REASONING_START", "REASONING_MESSAGE_START"]
    thought = "".join(e.delta for e in answer.of(ReasoningMessageContentEvent))
    assert thought == "two and two"
    assert types.index("REASONING_END") < types.index("TEXT_MESSAGE_START")
    assert answer.text() == "It is 4."


async def crawl(ctx: RunContext[Any], pages: int) -> str:
    """Reads some pages."""
    for page in range(pages):
        ctx.progress(f"page {page + 1} of {pages}", fraction=(page + 1) / pages)
    return f"read {pages}"


def test_a_server_side_tool_shows_its_call_progress_and_result() -> None:
    llm = S([S.tool_call("crawl", {"pages": 2}, id="c1"), "Read them."])
    agent = OpenaiToolCallingAgent("You read.", [crawl]).with_llm(llm)
    with serving(app(agent)) as running:
        answer = ask(running, "t", "read two pages")
    types = answer.types()
    start = answer.of(ToolCallStartEvent)[0]
    assert (start.tool_call_id, start.tool_call_name) == ("c1", "crawl")
    assert json.loads(answer.of(ToolCallArgsEvent)[0].delta) == {"pages": 2}
    progress = [e for e in answer.of(CustomEvent) if e.name == "tool_progress"]
    assert [p.value["fraction"] for p in progress] == [0.5, 1.0]
    assert progress[0].value == {
        "toolCallId": "c1",
        "name": "crawl",
        "message": "page 1 of 2",
        "fraction": 0.5,
    }
    result = answer.of(ToolCallResultEvent)[0]
    assert (result.tool_call_id, result.content) == ("c1", "read 2")
    first_progress = types.index("CUSTOM")
    assert types.index("TOOL_CALL_END") < first_progress < types.index("TOOL_CALL_RESULT")
    assert answer.text() == "Read them."
    assert types[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]


def test_a_nested_agent_streams_as_a_subagent_run() -> None:
    inner_llm = S([S.tool_call("crawl", {"pages": 1}, id="in1"), "Paris is large."])
    outer_llm = S([S.tool_call("researcher", {"request": "Paris?"}, id="out1"), "It is large."])
    inner = OpenaiToolCallingAgent("You research.", [crawl]).with_llm(inner_llm)
    outer = OpenaiToolCallingAgent(
        "You answer.", [Tool.from_module(inner, name="researcher")]
    ).with_llm(outer_llm)
    with serving(app(outer)) as running:
        answer = ask(running, "n", "Tell me about Paris")
    started = answer.of(SubagentStartedEvent)
    assert len(started) == 1
    sub = started[0]
    assert sub.name == inner.path and sub.metadata == {"path": inner.path}
    assert sub.parent_tool_call_id == "out1"
    assert answer.text(sub.subagent_run_id) == "Paris is large."
    assert answer.text() == "It is large."
    inner_calls = [e for e in answer.of(ToolCallStartEvent) if e.subagent_run_id]
    assert [(c.tool_call_id, c.subagent_run_id) for c in inner_calls] == [
        ("in1", sub.subagent_run_id)
    ]
    types = answer.types()
    finished = types.index("SUBAGENT_FINISHED")
    assert answer.of(SubagentFinishedEvent)[0].subagent_run_id == sub.subagent_run_id
    outer_result = next(
        i
        for i, e in enumerate(answer.events)
        if isinstance(e, ToolCallResultEvent) and e.tool_call_id == "out1"
    )
    assert types.index("SUBAGENT_STARTED") < finished < outer_result


class Grade(BaseModel):
    label: str
    score: float


def test_structured_output_is_json_text_and_the_result() -> None:
    agent = OpenaiToolCallingAgent("You grade.", structural_output=Grade)
    agent.with_llm(S(['{"label": "good", "score": 0.9}']))
    with serving(app(agent)) as running:
        answer = ask(running, "g", "grade this")
    assert Grade.model_validate_json(answer.text()) == Grade(label="good", score=0.9)
    assert answer.of(RunFinishedEvent)[0].result == {"label": "good", "score": 0.9}


def count_visit(ctx: RunContext[Any]) -> str:
    """Counts a visit in the page's state."""
    ctx.deps["visits"] += 1
    return f"visits: {ctx.deps['visits']}"


def test_the_clients_state_reaches_the_tools_and_comes_back() -> None:
    llm = S([S.tool_call("count_visit", {}), "Counted."])
    agent = OpenaiToolCallingAgent("You count.", [count_visit]).with_llm(llm)
    with serving(app(agent)) as running:
        answer = post(running.url, run_input("s", user("count"), state={"visits": 2}))
    assert answer.of(ToolCallResultEvent)[0].content == "visits: 3"
    snapshot = answer.of(StateSnapshotEvent)
    assert [s.snapshot for s in snapshot] == [{"visits": 3}]
    assert answer.types()[-2:] == ["STATE_SNAPSHOT", "RUN_FINISHED"]


def test_context_reaches_the_model(server: Running) -> None:
    context = [{"description": "page", "value": "checkout"}]
    answer = post(server.url, run_input("ctx", user("where am I?"), context=context))
    assert answer.text() == "heard: Context:\n- page: checkout | where am I?"


def test_two_users_with_the_same_thread_never_cross(store: SQLiteSessionStore) -> None:
    with serving(app(echo_agent(), store=store, tokens={ALICE: "alice", BOB: "bob"})) as running:
        assert ask(running, "shared", "alice's secret", token=ALICE).status == 200
        assert ask(running, "shared", "hi", token=BOB).text() == "heard: hi"
        again = ask(running, "shared", "again", token=ALICE).text()
        assert again == "heard: alice's secret | again"
        refused = ask(running, "shared", "let me in", token="not-a-token-at-all")
        assert refused.status == 401 and refused.error is not None
        assert refused.error.code == "invalid_api_key"
        assert len(running.call(store.load_turns("5:alice:shared"))) == 2
        assert len(running.call(store.load_turns("3:bob:shared"))) == 1


def refuse_secret(text: str) -> Verdict:
    return Verdict.block("a secret") if "hunter2" in text else Verdict.allow()


def redact_secret(text: str) -> Verdict:
    return Verdict.replace(text.replace("hunter2", "[redacted]"))


@pytest.mark.parametrize("guard", [refuse_secret, redact_secret])
def test_what_a_guardrail_holds_back_never_reaches_the_stream(guard: Any) -> None:
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[OutputGuardrail(guard)]).with_llm(
        S(["The password is hunter2, keep it."])
    )
    with serving(app(agent)) as running:
        answer = ask(running, "g", "password?")
    shown = " ".join(event.model_dump_json() for event in answer.events)
    assert "hunter2" not in shown
    if guard is refuse_secret:
        error = answer.of(RunErrorEvent)
        assert [e.code for e in error] == ["guardrail_blocked"]
        assert answer.types()[-1] == "RUN_ERROR"
    else:
        assert answer.text() == "The password is [redacted], keep it."
        assert answer.types()[-1] == "RUN_FINISHED"


def test_a_disconnect_cancels_the_run_and_stores_nothing(store: SQLiteSessionStore) -> None:
    gate = Gate()
    agent = OpenaiToolCallingAgent("You wait.").with_llm(S(gate.reply))
    with serving(app(agent, store=store)) as running:
        gate.open.set()
        assert ask(running, "d", "first").text() == "heard: first"
        gate.open.clear()
        body = json.dumps(run_input("d", user("lost"))).encode()
        with socket.create_connection(("127.0.0.1", running.port)) as raw:
            raw.sendall(
                b"POST /ag-ui HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            wait_for(lambda: gate.started == 2)  # the run waits for its model: leave
        wait_for(lambda: gate.cancelled == 1)
        wait_for(lambda: running.call(_runs(running)) == 0)
        gate.open.set()
        assert len(running.call(store.load_turns("5:local:d"))) == 1
        assert ask(running, "d", "next").text() == "heard: first | next"


async def _runs(running: Running) -> int:
    async with httpx.AsyncClient() as client:
        return int((await client.get(f"{running.url}/healthz")).json()["runs"])


URL = {"type": "url", "value": "http://127.0.0.1:9/cat.png"}


def _bad(thread: str = "b", **extra: Any) -> bytes:
    return json.dumps(run_input(thread, user("hi"), **extra)).encode()


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (b"{not json", 400, "invalid_json"),
        (b"[]", 400, "invalid_request"),
        (b'{"runId": "r", "messages": []}', 400, "invalid_input"),
        (b'{"threadId": 5, "runId": "r", "messages": []}', 400, "invalid_input"),
        (b'{"threadId": "t", "runId": "r", "messages": "hi"}', 400, "invalid_input"),
        (
            b'{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "wizard", '
            b'"content": "x"}]}',
            400,
            "invalid_input",
        ),
        (
            b'{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "user", '
            b'"content": 5}]}',
            400,
            "invalid_input",
        ),
        (b'{"threadId": "t", "runId": "r", "messages": []}', 400, "invalid_messages"),
        (
            b'{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "tool", '
            b'"toolCallId": "never", "content": "42"}]}',
            400,
            "invalid_tool_result",
        ),
        (
            _bad(resume=[{"interruptId": "nothing", "status": "resolved", "payload": True}]),
            400,
            "invalid_resume",
        ),
        (_bad(thread="x" * 300), 400, "invalid_conversation_id"),
        (
            _bad(tools=[{"name": "t", "description": "a"}, {"name": "t", "description": "b"}]),
            400,
            "invalid_tools",
        ),
        (_bad(tools="x"), 400, "invalid_input"),
        (_bad(resume=[{"interruptId": "x"}]), 400, "invalid_input"),
        (_bad(thread=" "), 400, "invalid_input"),
        (_bad(context=[{"description": 1, "value": "v"}]), 400, "invalid_input"),
        (
            json.dumps(
                run_input(
                    "img",
                    {"id": "1", "role": "user", "content": [{"type": "image", "source": URL}]},
                )
            ).encode(),
            400,
            "invalid_content",
        ),
        (
            b'{"threadId": "t", "runId": "r", "messages": [{"id": "1", "role": "user", '
            b'"content": "x"}], "state": ' + b'{"a": ' * 600 + b"1" + b"}" * 600 + b"}",
            400,
            "invalid_state",
        ),
        (
            b'{"threadId": "t", "runId": "r", "messages": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
            400,
            "invalid_json",
        ),
    ],
)
def test_bad_requests_are_4xx_run_errors(
    server: Running, body: bytes, status: int, code: str
) -> None:
    answer = post(server.url, body)
    assert answer.status == status and answer.error is not None
    assert answer.error.code == code and answer.error.message


def test_a_body_not_declared_json_is_415(server: Running) -> None:
    answer = post(server.url, _bad(), headers={"content-type": "text/plain"})
    assert answer.status == 415 and answer.error is not None
    assert answer.error.code == "unsupported_media_type"


def tangle(ctx: RunContext[Any]) -> str:
    """Ties the state into a loop."""
    ctx.deps["self"] = ctx.deps
    return "tangled"


def test_a_state_a_tool_left_unwritable_ends_in_run_error_not_a_cut_stream() -> None:
    agent = OpenaiToolCallingAgent("You tangle.", [tangle])
    agent.with_llm(S([S.tool_call("tangle", {}), "Done."]))
    with serving(app(agent)) as running:
        answer = post(running.url, run_input("s", user("go"), state={"n": 1}))
        assert answer.status == 200
        assert answer.types()[-1] == "RUN_ERROR"
        assert answer.of(RunErrorEvent)[0].code == "run_failed"
        assert ask(running, "s2", "still serving").status == 200


def test_a_body_past_the_limit_is_413() -> None:
    with serving(app(echo_agent(), max_body_bytes=2000)) as running:
        answer = ask(running, "big", "x" * 5000)
        assert answer.status == 413 and answer.error is not None
        assert answer.error.code == "request_too_large"
        assert ask(running, "big", "short").text() == "heard: short"


def test_compaction_is_a_custom_event() -> None:
    event = CompactionEvent(3, 9000, 2000, ("clear_tool_results", "summarize"), Usage())
    (custom,) = list(Translation().events(event))
    assert isinstance(custom, CustomEvent) and custom.name == "compaction"
    assert CustomEvent.model_validate_json(custom.model_dump_json(by_alias=True)).value == {
        "step": 3,
        "tokensBefore": 9000,
        "tokensAfter": 2000,
        "steps": ["clear_tool_results", "summarize"],
    }


class Shout(Module):
    """Not an agent: a module that answers text with text."""

    async def forward(self, text: str) -> str:
        return text.upper()


def test_a_module_that_is_no_agent_answers_as_one_text_message() -> None:
    with serving(app(Shout())) as running:
        answer = ask(running, "p", "quiet please")
    assert answer.types() == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert answer.text() == "QUIET PLEASE"


def test_many_users_at_once_on_one_thread_id_never_cross(store: SQLiteSessionStore) -> None:
    """Eight callers at once, two turns each, all naming the thread "same", on a real SQLite
    file: each hears only its own turns."""
    tokens = {f"token-of-user-{n}": f"user{n}" for n in range(8)}

    async def talk(client: httpx.AsyncClient, token: str) -> str:
        heard = ""
        for turn in range(2):
            reply = await client.post(
                f"{running.url}/ag-ui",
                json=run_input("same", user(f"{token} {turn}")),
                headers={"authorization": f"Bearer {token}"},
                timeout=60,
            )
            heard = "".join(
                e.delta for e in parse_sse(reply.text) if isinstance(e, TextMessageContentEvent)
            )
        return heard

    async def main() -> list[str]:
        async with httpx.AsyncClient() as client:
            return list(await asyncio.gather(*(talk(client, token) for token in tokens)))

    with serving(app(echo_agent(), store=store, tokens=tokens)) as running:
        heard = asyncio.run(main())
    assert heard == [f"heard: {token} 0 | {token} 1" for token in tokens]


def test_closing_a_run_closes_a_nested_run_left_open() -> None:
    translation = Translation()
    opened = list(
        translation.events(SubAgentEvent("root.researcher", "c1", TextDelta("half", 0), 0))
    )
    assert [e.type.value for e in opened] == [
        "SUBAGENT_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
    ]
    closed = list(translation.close())
    assert [e.type.value for e in closed] == ["TEXT_MESSAGE_END", "SUBAGENT_FINISHED"]
    assert {getattr(e, "subagent_run_id", None) for e in [*opened, *closed]} == {
        opened[0].subagent_run_id
    }
    assert list(translation.close()) == []


def test_an_agent_on_the_fake_openai_server_streams_through_the_endpoint() -> None:
    """The served agent's model is the real `openai` SDK talking to the fake OpenAI server."""
    with FakeOpenAIServer() as fake:
        fake.chat.script(
            Reply(content="Let me read.", tool_calls=[ToolCall("crawl", {"pages": 1})]),
            "I read one page.",
        )
        llm = OpenAILike("m", api_key=fake.api_key, base_url=fake.base_url, timeout=30.0)
        agent = OpenaiToolCallingAgent("You read.", [crawl]).with_llm(llm)
        with serving(app(agent)) as running:
            answer = ask(running, "fake", "read a page")
    types = answer.types()
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert answer.text() == "Let me read.I read one page."
    (start,) = answer.of(ToolCallStartEvent)
    (result,) = answer.of(ToolCallResultEvent)
    assert start.tool_call_id == result.tool_call_id and result.content == "read 1"
    first_message_end = types.index("TEXT_MESSAGE_END")
    assert first_message_end < types.index("TOOL_CALL_START")


def test_a_run_past_the_limit_gets_503_with_retry_after() -> None:
    gate = Gate()
    agent = OpenaiToolCallingAgent("You wait.").with_llm(S(gate.reply))
    with serving(app(agent, max_concurrent_runs=1)) as running:
        answers: list[Answer] = []
        first = threading.Thread(target=lambda: answers.append(ask(running, "a", "first")))
        first.start()
        wait_for(lambda: gate.started == 1)
        busy = ask(running, "b", "one too many")
        assert busy.status == 503 and busy.headers["retry-after"] == "1"
        assert busy.error is not None and busy.error.code == "server_busy"
        gate.open.set()
        first.join(60)
        assert answers[0].text() == "heard: first"
        assert ask(running, "b", "after").text() == "heard: after"


def no_secrets_asked(text: str) -> Verdict:
    return Verdict.block("asks for a secret") if "password" in text else Verdict.allow()


def test_a_request_an_input_guardrail_blocks_is_a_run_error_and_stores_nothing(
    store: SQLiteSessionStore,
) -> None:
    llm = S(["never sent"])
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[InputGuardrail(no_secrets_asked)])
    with serving(app(agent.with_llm(llm), store=store)) as running:
        answer = ask(running, "in", "what is the admin password?")
        assert answer.types() == ["RUN_STARTED", "RUN_ERROR"]
        assert answer.of(RunErrorEvent)[0].code == "guardrail_blocked"
        assert running.call(store.load_turns("5:local:in")) == []
    assert llm.requests == []
