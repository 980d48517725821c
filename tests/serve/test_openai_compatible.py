"""The OpenAI-compatible face, driven by the `openai` SDK and by promptimus's own `OpenAILike`
through a real uvicorn server on 127.0.0.1: answers, streams with usage, conversations kept per
caller in a real SQLite store, tools run server-side, and every bad request in OpenAI's error
shape."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel
from serve_support import Running, serving

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.llms import OpenAILike
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.sessions import SQLiteSessionStore
from promptimus.tools.tool import Tool

ALICE, BOB = "alice-token-123", "bob-token-4567"


def said(history: list[Message]) -> list[str]:
    return [m.content for m in history if m.role == MessageRole.USER]


def echo(history: list[Message], kwargs: dict[str, Any]) -> str:
    """Replies with every user message it was sent, so a test sees the history it had."""
    return "heard: " + " | ".join(said(history))


def echo_agent() -> OpenaiToolCallingAgent:
    agent = OpenaiToolCallingAgent("You repeat what you hear.")
    agent.with_llm(ScriptedLLM(echo))
    return agent


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteSessionStore]:
    store = SQLiteSessionStore(tmp_path / "chats.db")
    yield store
    store.close()


@pytest.fixture
def server(store: SQLiteSessionStore) -> Iterator[Running]:
    with serving(app(echo_agent(), store=store, name="echo")) as running:
        yield running


def client(running: Running, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{running.url}/v1", api_key=key, max_retries=0)


def ask(sdk: openai.OpenAI, text: str, **extra: Any) -> str:
    reply = sdk.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": text}], **extra
    )
    return reply.choices[0].message.content or ""


def test_the_sdk_gets_the_answer_with_usage(server: Running) -> None:
    reply = client(server).chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "hello"}]
    )
    assert reply.choices[0].message.content == "heard: hello"
    assert reply.choices[0].finish_reason == "stop"
    assert reply.model == "echo"
    assert reply.usage is not None and reply.usage.completion_tokens > 0
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_the_sdk_streams_the_answer_and_its_usage(server: Running) -> None:
    chunks = list(
        client(server).chat.completions.create(
            model="echo",
            messages=[{"role": "user", "content": "tell me a long story please"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "heard: tell me a long story please"
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) > 1
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0


def test_models_lists_the_served_name(server: Running) -> None:
    assert [m.id for m in client(server).models.list()] == ["echo"]
    assert httpx.get(f"{server.url}/healthz").json()["status"] == "ok"


async def test_openailike_pointed_at_the_server_works_unchanged(server: Running) -> None:
    llm = OpenAILike("echo", api_key="unused", base_url=f"{server.url}/v1")
    reply = await llm.achat([Message(role=MessageRole.USER, content="from a model")])
    assert reply.content == "heard: from a model"
    assert reply.usage is not None and reply.usage.completion_tokens > 0
    pieces = [
        d.content async for d in llm.astream([Message(role=MessageRole.USER, content="streamed")])
    ]
    assert "".join(p or "" for p in pieces) == "heard: streamed"
    # a served agent is any other agent's model
    outer = OpenaiToolCallingAgent("You pass things on.")
    outer.with_llm(llm)
    assert (await outer("nested")).content == "heard: nested"


def test_a_named_conversation_is_kept_in_the_store(
    server: Running, store: SQLiteSessionStore
) -> None:
    sdk = client(server)
    assert ask(sdk, "my name is Ann", user="c1") == "heard: my name is Ann"
    assert ask(sdk, "who am I?", user="c1") == "heard: my name is Ann | who am I?"
    # the header names it too, and another id is another conversation
    second = sdk.chat.completions.create(
        model="echo",
        messages=[{"role": "user", "content": "fresh"}],
        extra_headers={"X-Session-Id": "c2"},
    )
    assert second.choices[0].message.content == "heard: fresh"
    assert len(server.call(store.load_turns("5:local:c1"))) == 2


def test_without_a_name_each_request_is_its_own_conversation(server: Running) -> None:
    sdk = client(server)
    assert ask(sdk, "one") == "heard: one"
    assert ask(sdk, "two") == "heard: two"
    history = sdk.chat.completions.create(
        model="echo",
        messages=[
            {"role": "system", "content": "ignored: the module has its own"},
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "heard: a"},
            {"role": "user", "content": [{"type": "text", "text": "b"}]},
        ],
    )
    assert history.choices[0].message.content == "heard: a | b"


def test_two_users_naming_the_same_conversation_have_two(store: SQLiteSessionStore) -> None:
    tokens = {ALICE: "alice", BOB: "bob"}
    with serving(app(echo_agent(), store=store, tokens=tokens)) as running:
        alice, bob = client(running, ALICE), client(running, BOB)
        assert ask(alice, "alice's secret", user="shared") == "heard: alice's secret"
        assert ask(bob, "hi", user="shared") == "heard: hi"
        assert ask(alice, "again", user="shared") == "heard: alice's secret | again"
        with pytest.raises(openai.AuthenticationError) as refused:
            ask(client(running, "not-a-token"), "let me in", user="shared")
        assert refused.value.body["code"] == "invalid_api_key"  # type: ignore[index]
        answer = httpx.post(
            f"{running.url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "no key"}]},
        )
        assert answer.status_code == 401
        assert answer.json()["error"]["type"] == "authentication_error"


def test_many_users_at_once_never_cross(backend: Any) -> None:
    """Twelve callers at once, three turns each, all naming the same conversation id, on a real
    SQLite file, PostgreSQL server and Redis server: each hears only its own turns."""
    store = backend.make()
    tokens = {f"token-of-user-{n}": f"user{n}" for n in range(12)}

    async def main() -> None:
        async def talk(token: str) -> list[str]:
            sdk = openai.AsyncOpenAI(base_url=f"{running.url}/v1", api_key=token, max_retries=0)
            answers = []
            for turn in range(3):
                reply = await sdk.chat.completions.create(
                    model="echo",
                    messages=[{"role": "user", "content": f"{token} {turn}"}],
                    user="same-id",
                    stream=False,
                )
                answers.append(reply.choices[0].message.content or "")
            await sdk.close()
            return answers

        results = await asyncio.gather(*(talk(token) for token in tokens))
        for token, answers in zip(tokens, results, strict=True):
            assert answers[-1] == f"heard: {token} 0 | {token} 1 | {token} 2"

    with serving(app(echo_agent(), store=store, tokens=tokens)) as running:
        asyncio.run(main())
        running.call(store.aclose())


def lookup(order: int) -> str:
    """Look an order up."""
    return f"order {order}: shipped"


def test_the_module_runs_its_own_tools_and_answers(store: SQLiteSessionStore) -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("lookup", {"order": 7}), "Order 7 has shipped."])
    agent = OpenaiToolCallingAgent("You help with orders.", [Tool(lookup)])
    agent.with_llm(llm)
    with serving(app(agent, store=store)) as running:
        chunks = list(
            client(running).chat.completions.create(
                model="x", messages=[{"role": "user", "content": "where is 7?"}], stream=True
            )
        )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Order 7 has shipped."
    assert all(not c.choices or c.choices[0].delta.tool_calls is None for c in chunks)
    assert llm.requests[1][0][-1].content == "order 7: shipped"


class Verdict(BaseModel):
    label: str
    score: float


def test_structured_output_is_json_content(store: SQLiteSessionStore) -> None:
    agent = OpenaiToolCallingAgent("You grade.", structural_output=Verdict)
    agent.with_llm(ScriptedLLM(['{"label": "good", "score": 0.9}'] * 2))
    with serving(app(agent)) as running:
        sdk = client(running)
        assert Verdict.model_validate_json(ask(sdk, "grade this")) == Verdict(
            label="good", score=0.9
        )
        streamed = sdk.chat.completions.create(
            model="x", messages=[{"role": "user", "content": "again"}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
        assert Verdict.model_validate_json(text) == Verdict(label="good", score=0.9)


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", "invalid_json"),
        (b"[]", "invalid_request"),
        (b'{"messages": []}', "invalid_messages"),
        (b'{"messages": [{"role": "wizard", "content": "x"}]}', "invalid_role"),
        (b'{"messages": [{"role": "user", "content": 5}]}', "invalid_content"),
        (
            b'{"messages": [{"role": "user", "content": "x"}, '
            b'{"role": "tool", "tool_call_id": "never", "content": "42"}]}',
            "invalid_tool_result",
        ),
        (b'{"messages": [{"role": "user", "content": "x"}], "user": 5}', "invalid_user"),
        (
            b'{"messages": [{"role": "user", "content": "x"}], "user": "' + b"x" * 300 + b'"}',
            "invalid_conversation_id",
        ),
    ],
)
def test_bad_requests_are_400_in_openais_error_shape(
    server: Running, body: bytes, code: str
) -> None:
    answer = httpx.post(
        f"{server.url}/v1/chat/completions",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == code and error["type"] == "invalid_request_error"
    assert "Traceback" not in answer.text


def test_the_sdk_raises_a_bad_request_error(server: Running) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        client(server).chat.completions.create(
            model="echo", messages=[{"role": "assistant", "content": "I go first"}]
        )
    assert "last message must be the user's" in str(refused.value)


def test_a_body_past_the_limit_is_413(store: SQLiteSessionStore) -> None:
    with serving(app(echo_agent(), max_body_bytes=2000)) as running:
        with pytest.raises(openai.APIStatusError) as refused:
            ask(client(running), "x" * 5000)
        assert refused.value.status_code == 413
        assert ask(client(running), "short") == "heard: short"

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b'{"messages": [{"role": "user", "content": "'
            for _ in range(10):
                yield b"y" * 500
            yield b'"}]}'

        answer = httpx.post(
            f"{running.url}/v1/chat/completions",
            content=chunks(),
            headers={"content-type": "application/json"},
        )
        assert answer.status_code == 413
        assert answer.json()["error"]["code"] == "request_too_large"


class Gate:
    """Holds every model call until opened; counts the calls that started."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.started = 0
        self.cancelled = 0

    async def reply(self, history: list[Message], kwargs: dict[str, Any]) -> str:
        self.started += 1
        try:
            while not self.open.is_set():  # noqa: ASYNC110 - set from the test's thread
                await asyncio.sleep(0.01)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return "heard: " + " | ".join(said(history))


def wait_for(condition: Any) -> None:
    """Until `condition()` holds (a hang guard of 60 s, not a speed check)."""
    event = threading.Event()
    for _ in range(6000):
        if condition():
            return
        event.wait(0.01)
    raise AssertionError("the condition never held")


def test_runs_past_the_limit_get_503_with_retry_after(store: SQLiteSessionStore) -> None:
    gate = Gate()
    agent = OpenaiToolCallingAgent("You wait.")
    agent.with_llm(ScriptedLLM(gate.reply))
    with serving(app(agent, store=store, max_concurrent_runs=2)) as running:
        results: list[str] = []
        threads = [
            threading.Thread(target=lambda n=n: results.append(ask(client(running), f"q{n}")))
            for n in range(2)
        ]
        for thread in threads:
            thread.start()
        wait_for(lambda: gate.started == 2)
        answer = httpx.post(
            f"{running.url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "one too many"}]},
        )
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == "1"
        assert answer.json()["error"]["code"] == "server_busy"
        gate.open.set()
        for thread in threads:
            thread.join(60)
        assert sorted(results) == ["heard: q0", "heard: q1"]
        assert ask(client(running), "after") == "heard: after"


@pytest.mark.parametrize("stream", [True, False])
def test_a_disconnect_cancels_the_run_and_leaves_the_conversation(
    store: SQLiteSessionStore, stream: bool
) -> None:
    gate = Gate()
    agent = OpenaiToolCallingAgent("You wait.")
    agent.with_llm(ScriptedLLM(gate.reply))
    with serving(app(agent, store=store)) as running:
        gate.open.set()
        assert ask(client(running), "first", user="c") == "heard: first"
        gate.open.clear()
        body = json.dumps(
            {"messages": [{"role": "user", "content": "lost"}], "user": "c", "stream": stream}
        ).encode()
        with socket.create_connection(("127.0.0.1", running.port)) as raw:
            raw.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body
            )
            wait_for(lambda: gate.started == 2)  # the run is waiting for its model: leave
        wait_for(lambda: gate.cancelled == 1)
        wait_for(lambda: httpx.get(f"{running.url}/healthz").json()["runs"] == 0)
        gate.open.set()
        assert len(running.call(store.load_turns("5:local:c"))) == 1
        assert ask(client(running), "next", user="c") == "heard: first | next"


def test_a_request_for_another_host_is_refused() -> None:
    with serving(app(echo_agent(), allowed_hosts={"right.host:1"})) as running:
        wrong = httpx.get(f"{running.url}/v1/models", headers={"host": "rebound.example:80"})
        assert wrong.status_code == 403
        right = httpx.get(f"{running.url}/v1/models", headers={"host": "right.host:1"})
        assert right.status_code == 200


def test_app_refuses_bad_arguments() -> None:
    from promptimus.errors import InvalidArgument

    for bad in (
        {"max_concurrent_runs": 0},
        {"max_concurrent_runs": float("nan")},
        {"max_body_bytes": "10"},
        {"max_body_bytes": True},
        {"tokens": {"short": "alice"}},
        {"tokens": {"long-enough-token": ""}},
        {"store": "chats.db"},
    ):
        with pytest.raises(InvalidArgument):
            app(echo_agent(), **bad)
    with pytest.raises(InvalidArgument):
        app("not a module")  # type: ignore[arg-type]
    assert "long-enough-token" not in repr(
        app(echo_agent(), tokens={"long-enough-token": "a"}).state.served
    )
