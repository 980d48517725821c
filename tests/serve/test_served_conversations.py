"""Conversations served without a store live in the server's memory, at most
`max_conversations` of them: the least recently used is forgotten first. And what a hostile
client sends cannot make the server answer 500."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from typing import Any

import httpx
import openai
import pytest
from serve_support import Running, serving

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.errors import InvalidArgument
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app


def echo(history: list[Message], kwargs: dict[str, Any]) -> str:
    return "heard: " + " | ".join(m.content for m in history if m.role == MessageRole.USER)


def echo_agent() -> OpenaiToolCallingAgent:
    agent = OpenaiToolCallingAgent("You repeat what you hear.")
    agent.with_llm(ScriptedLLM(echo))
    return agent


def ask(running: Running, conversation: str, text: str) -> str:
    sdk = openai.OpenAI(base_url=f"{running.url}/v1", api_key="unused", max_retries=0)
    reply = sdk.chat.completions.create(
        model="x", messages=[{"role": "user", "content": text}], user=conversation
    )
    return reply.choices[0].message.content or ""


def test_the_least_recently_used_conversation_is_forgotten_first() -> None:
    with serving(app(echo_agent(), max_conversations=2)) as running:
        assert ask(running, "a", "a1") == "heard: a1"
        assert ask(running, "b", "b1") == "heard: b1"
        assert ask(running, "a", "a2") == "heard: a1 | a2"  # a is now the most recent
        assert ask(running, "c", "c1") == "heard: c1"  # b, the least recent, goes
        assert ask(running, "b", "b2") == "heard: b2"  # so b starts again; a goes
        assert ask(running, "c", "c2") == "heard: c1 | c2"
        assert ask(running, "a", "a3") == "heard: a3"


def test_many_conversations_keep_at_most_the_cap() -> None:
    asgi = app(echo_agent(), max_conversations=5)
    with serving(asgi) as running:
        for n in range(40):
            ask(running, f"c{n}", "hi")
        assert len(asgi.state.served.conversations) == 5
        assert ask(running, "c39", "again") == "heard: hi | again"


@pytest.mark.parametrize("bad", [0, -1, 2.5, float("nan"), float("inf"), "100", True, None])
def test_max_conversations_is_checked_where_given(bad: Any) -> None:
    with pytest.raises(InvalidArgument, match="max_conversations"):
        app(echo_agent(), max_conversations=bad)


@pytest.mark.parametrize(
    "body",
    [
        b'{"messages": [{"role": "user", "content": "x"}], "n": ' + b"1" * 5000 + b"}",
        b"\xff\xfe{}",
    ],
)
def test_a_hostile_body_is_400_not_500(body: bytes) -> None:
    with serving(app(echo_agent())) as running:
        answer = httpx.post(
            f"{running.url}/v1/chat/completions",
            content=body,
            headers={"content-type": "application/json"},
        )
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["code"] == "invalid_json"


async def test_a_run_cancelled_before_it_started_gives_its_slot_back() -> None:
    from promptimus.core.session import Session
    from promptimus.serve.served_run import RunSlots, ServedRun

    slots = RunSlots(1)
    slots.take()
    run = ServedRun(echo_agent(), "hello", Session(None), slots)
    await run.cancel()  # the client left before the run's task took its first step
    assert slots.busy == 0
    slots.take()  # the next request is served, not refused as busy


class Gate:
    """Holds every model call until opened; counts the calls that started."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.started = 0

    async def reply(self, history: list[Message], kwargs: dict[str, Any]) -> str:
        self.started += 1
        while not self.open.is_set():  # noqa: ASYNC110 - set from the test's thread
            await asyncio.sleep(0.01)
        return echo(history, kwargs)


def wait_for(condition: Any) -> None:
    """Until `condition()` holds (a hang guard of 60 s, not a speed check)."""
    event = threading.Event()
    for _ in range(6000):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError("the condition never held")


def test_a_disconnect_leaves_a_conversation_in_memory_as_it_was() -> None:
    gate = Gate()
    agent = OpenaiToolCallingAgent("You wait.")
    agent.with_llm(ScriptedLLM(gate.reply))
    with serving(app(agent)) as running:
        gate.open.set()
        assert ask(running, "c", "first") == "heard: first"
        gate.open.clear()
        body = json.dumps({"messages": [{"role": "user", "content": "lost"}], "user": "c"})
        with socket.create_connection(("127.0.0.1", running.port)) as raw:
            raw.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
            )
            wait_for(lambda: gate.started == 2)  # the run is waiting for its model: leave
        wait_for(lambda: httpx.get(f"{running.url}/healthz").json()["runs"] == 0)
        gate.open.set()
        assert ask(running, "c", "next") == "heard: first | next"


def test_two_requests_at_once_in_one_conversation_in_memory_lose_neither_turn() -> None:
    gate = Gate()
    agent = OpenaiToolCallingAgent("You wait.")
    agent.with_llm(ScriptedLLM(gate.reply))
    with serving(app(agent)) as running:
        answers: list[str] = []
        threads = [
            threading.Thread(target=lambda t=t: answers.append(ask(running, "c", t)))
            for t in ("one", "two")
        ]
        for thread in threads:
            thread.start()
        wait_for(lambda: gate.started >= 1)
        gate.open.set()
        for thread in threads:
            thread.join(60)
        assert sorted(answers) in (
            ["heard: one", "heard: two"],  # both began from the same history
            ["heard: one", "heard: one | two"],
            ["heard: two", "heard: two | one"],
        )
        assert ask(running, "c", "three") in (
            "heard: one | two | three",
            "heard: two | one | three",
        )
