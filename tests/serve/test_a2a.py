"""The A2A face, driven by the official a2a-sdk client through a real uvicorn server on
127.0.0.1: the card, send, stream, tasks get and cancel, conversations kept per caller in a
real SQLite store, and bad input in JSON-RPC's error shape."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, A2AClientError, Client, ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from a2a.utils.errors import (
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from serve_support import Running, serving
from starlette.applications import Starlette
from starlette.routing import Mount

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.core.module import Module
from promptimus.dto import Message as PromptimusMessage
from promptimus.dto import MessageRole
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.sessions import SQLiteSessionStore
from promptimus.tools.tool import Tool

ALICE, BOB = "alice-token-123", "bob-token-4567"


def said(history: list[PromptimusMessage]) -> list[str]:
    return [m.content for m in history if m.role == MessageRole.USER]


def echo(history: list[PromptimusMessage], kwargs: dict[str, Any]) -> str:
    """Replies with every user message it was sent, so a test sees the history it had."""
    return "heard: " + " | ".join(said(history))


def lookup(order: int) -> str:
    """Look up where an order is."""
    return f"order {order}: shipped"


def echo_agent() -> OpenaiToolCallingAgent:
    agent = OpenaiToolCallingAgent("You repeat what you hear.", [Tool(lookup)])
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


@asynccontextmanager
async def connect(
    running: Running, token: str | None = None, *, streaming: bool = True
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        client = await create_client(
            running.url, client_config=ClientConfig(httpx_client=http, streaming=streaming)
        )
        yield client


def message(text: str, *, context_id: str = "", task_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            parts=[Part(text=text)],
            context_id=context_id,
            task_id=task_id,
        )
    )


async def send(client: Client, text: str, **ids: str) -> Task:
    """The task a message ends as (the client not streaming)."""
    responses = [r async for r in client.send_message(message(text, **ids))]
    assert len(responses) == 1 and responses[0].HasField("task")
    return responses[0].task


def answer(task: Task) -> str:
    [artifact] = task.artifacts
    return "".join(part.text for part in artifact.parts)


def test_the_sdk_reads_the_card() -> None:
    with serving(app(echo_agent(), name="echo")) as running:

        async def main() -> None:
            async with httpx.AsyncClient() as http:
                card = await A2ACardResolver(http, running.url).get_agent_card()
            assert card.name == "echo"
            assert card.capabilities.streaming
            [interface] = card.supported_interfaces
            assert interface.url == f"{running.url}/a2a"
            assert interface.protocol_binding == "JSONRPC"
            assert interface.protocol_version == "1.0"
            skills = {skill.name: skill.description for skill in card.skills}
            assert skills["lookup"] == "Look up where an order is."
            assert "echo" in skills
            assert not card.security_schemes

        asyncio.run(main())
    with serving(app(echo_agent(), tokens={ALICE: "alice"})) as running:
        card = httpx.get(f"{running.url}/.well-known/agent-card.json").json()
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
        assert ALICE not in str(card)


def test_send_answers_with_a_completed_task(server: Running) -> None:
    async def main() -> None:
        async with connect(server, streaming=False) as client:
            task = await send(client, "hello")
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer(task) == "heard: hello"
        assert task.context_id

    asyncio.run(main())


def test_stream_sends_the_answer_in_pieces(server: Running) -> None:
    async def main() -> None:
        async with connect(server) as client:
            events = [e async for e in client.send_message(message("tell me a long story"))]
        pieces = [e.artifact_update for e in events if e.HasField("artifact_update")]
        streamed = [p.artifact.parts[0].text for p in pieces[:-1]]
        assert len(streamed) > 1 and "".join(streamed) == "heard: tell me a long story"
        assert not pieces[0].append and all(p.append for p in pieces[1:-1])
        # the last chunk is the whole answer, replacing the pieces: the task keeps one part
        last = pieces[-1]
        assert last.last_chunk and not last.append
        assert [p.text for p in last.artifact.parts] == ["heard: tell me a long story"]
        assert len({p.artifact.artifact_id for p in pieces}) == 1
        states = [e.status_update.status.state for e in events if e.HasField("status_update")]
        assert states[0] == TaskState.TASK_STATE_WORKING
        assert states[-1] == TaskState.TASK_STATE_COMPLETED

    asyncio.run(main())


def test_tasks_get_returns_the_task(server: Running) -> None:
    async def main() -> None:
        async with connect(server, streaming=False) as client:
            sent = await send(client, "remember me")
            got = await client.get_task(GetTaskRequest(id=sent.id))
        assert got.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer(got) == "heard: remember me"
        assert got.history[0].parts[0].text == "remember me"

    asyncio.run(main())


def test_a_context_id_continues_the_conversation(
    server: Running, store: SQLiteSessionStore
) -> None:
    async def main() -> None:
        async with connect(server, streaming=False) as client:
            first = await send(client, "my name is Ann", context_id="c1")
            second = await send(client, "who am I?", context_id="c1")
            other = await send(client, "fresh")
        assert answer(second) == "heard: my name is Ann | who am I?"
        assert first.context_id == second.context_id == "c1"
        assert answer(other) == "heard: fresh"

    asyncio.run(main())
    assert len(server.call(store.load_turns("5:local:c1"))) == 2


def test_two_users_naming_the_same_context_have_two_conversations(
    store: SQLiteSessionStore,
) -> None:
    tokens = {ALICE: "alice", BOB: "bob"}
    with serving(app(echo_agent(), store=store, tokens=tokens)) as running:

        async def main() -> None:
            async with (
                connect(running, ALICE, streaming=False) as alice,
                connect(running, BOB, streaming=False) as bob,
            ):
                secret = await send(alice, "alice's secret", context_id="shared")
                assert answer(await send(bob, "hi", context_id="shared")) == "heard: hi"
                again = await send(alice, "again", context_id="shared")
                assert answer(again) == "heard: alice's secret | again"
                # another caller's task id is "task not found", never its content
                calls: list[Callable[[], Awaitable[Any]]] = [
                    lambda: bob.get_task(GetTaskRequest(id=secret.id)),
                    lambda: bob.cancel_task(CancelTaskRequest(id=secret.id)),
                    lambda: send(bob, "continue hers", task_id=secret.id),
                ]
                for call in calls:
                    with pytest.raises(TaskNotFoundError) as refused:
                        await call()
                    assert "secret" not in str(refused.value)
                subscribed = await asyncio.to_thread(
                    rpc,
                    running,
                    {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "SubscribeToTask",
                        "params": {"id": secret.id},
                    },
                    authorization=f"Bearer {BOB}",
                )
                assert subscribed.json()["error"]["code"] == -32001
                assert "secret" not in subscribed.text
                assert answer(await alice.get_task(GetTaskRequest(id=secret.id))).endswith("secret")
                listed = await bob.list_tasks(ListTasksRequest(include_artifacts=True))
                assert len(listed.tasks) == 1 and "secret" not in str(listed)
                assert len((await alice.list_tasks(ListTasksRequest())).tasks) == 2
            async with connect(running, "not-a-token", streaming=False) as stranger:
                with pytest.raises(A2AClientError):
                    await send(stranger, "let me in")

        asyncio.run(main())
        assert len(running.call(store.load_turns("5:alice:shared"))) == 2
        assert len(running.call(store.load_turns("3:bob:shared"))) == 1
        refused = httpx.post(
            f"{running.url}/a2a",
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
        )
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == "Bearer"
        assert refused.json()["error"]["code"] == -32600


class Gate:
    """Holds every model call until opened; counts the calls that started and were cancelled."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.started = 0
        self.cancelled = 0

    async def reply(self, history: list[PromptimusMessage], kwargs: dict[str, Any]) -> str:
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


def gated_agent(gate: Gate) -> OpenaiToolCallingAgent:
    agent = OpenaiToolCallingAgent("You wait.")
    agent.with_llm(ScriptedLLM(gate.reply))
    return agent


def test_cancel_stops_the_run_and_stores_nothing(store: SQLiteSessionStore) -> None:
    gate = Gate()
    with serving(app(gated_agent(gate), store=store)) as running:

        async def main() -> None:
            async with connect(running) as client, connect(running, streaming=False) as plain:
                gate.open.set()
                await send(plain, "first", context_id="c")
                gate.open.clear()
                stream = client.send_message(message("lost", context_id="c"))
                first: StreamResponse = await anext(stream)
                task_id = first.task.id if first.HasField("task") else ""
                assert task_id
                await asyncio.to_thread(wait_for, lambda: gate.started == 2)
                canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
                assert canceled.status.state == TaskState.TASK_STATE_CANCELED
                await stream.aclose()
                await asyncio.to_thread(wait_for, lambda: gate.cancelled == 1)
                got = await client.get_task(GetTaskRequest(id=task_id))
                assert got.status.state == TaskState.TASK_STATE_CANCELED
                assert not got.artifacts
                with pytest.raises(TaskNotCancelableError):
                    await client.cancel_task(CancelTaskRequest(id=task_id))
                gate.open.set()
                after = await send(plain, "next", context_id="c")
                assert answer(after) == "heard: first | next"

        asyncio.run(main())
        assert httpx.get(f"{running.url}/healthz").json()["runs"] == 0
        assert len(running.call(store.load_turns("5:local:c"))) == 2


async def send_collect(client: Client, text: str) -> list[StreamResponse]:
    return [e async for e in client.send_message(message(text))]


def test_runs_past_the_limit_get_503_with_retry_after() -> None:
    gate = Gate()
    with serving(app(gated_agent(gate), max_concurrent_runs=1)) as running:

        async def main() -> None:
            async with connect(running) as client, connect(running, streaming=False) as plain:
                held = asyncio.create_task(send_collect(client, "q0"))
                await asyncio.to_thread(wait_for, lambda: gate.started == 1)
                async with httpx.AsyncClient() as http:
                    busy = await http.post(
                        f"{running.url}/a2a",
                        json={
                            "jsonrpc": "2.0",
                            "id": "r1",
                            "method": "SendMessage",
                            "params": message_params("one too many"),
                        },
                        headers={"A2A-Version": "1.0"},
                    )
                assert busy.status_code == 503
                assert busy.headers["retry-after"] == "1"
                assert busy.json()["id"] == "r1" and busy.json()["error"]["code"] == -32603
                gate.open.set()
                events = await held
                assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
                assert answer(await send(plain, "after")) == "heard: after"

        asyncio.run(main())


def message_params(text: str, **fields: Any) -> dict[str, Any]:
    return {
        "message": {
            "role": "ROLE_USER",
            "messageId": uuid.uuid4().hex,
            "parts": [{"text": text}],
            **fields,
        }
    }


def rpc(running: Running, body: Any, **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(
        f"{running.url}/a2a",
        content=content,
        headers={"content-type": "application/json", "A2A-Version": "1.0", **headers},
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"[]", -32600),
        (b'{"id": 1, "method": "GetTask", "params": {"id": "x"}}', -32600),
        ({"jsonrpc": "2.0", "id": 1, "method": "TakeOverTheWorld"}, -32601),
        ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 5}}, -32602),
        ({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 7}}, -32602),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {
                    "message": {
                        "role": "ROLE_AGENT",
                        "messageId": "m",
                        "parts": [{"text": "I speak first"}],
                    }
                },
            },
            -32602,
        ),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": {"role": "ROLE_WIZARD", "messageId": "m", "parts": []}},
            },
            -32602,
        ),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": message_params("   "),
            },
            -32602,
        ),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {
                    "message": {
                        "role": "ROLE_USER",
                        "messageId": "m",
                        "parts": [{"url": "file:///etc/passwd"}],
                    }
                },
            },
            -32005,
        ),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": message_params("hi", contextId="x" * 300),
            },
            -32602,
        ),
        ({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}, -32001),
        ({"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": "nope"}}, -32001),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": message_params("hi", taskId="never-made"),
            },
            -32001,
        ),
    ],
)
def test_bad_requests_get_json_rpc_errors(server: Running, body: Any, code: int) -> None:
    answered = rpc(server, body)
    assert answered.status_code == 200
    assert answered.json()["error"]["code"] == code
    assert answered.json()["jsonrpc"] == "2.0"
    assert "Traceback" not in answered.text
    assert httpx.get(f"{server.url}/healthz").json()["runs"] == 0


def test_a_finished_task_is_not_cancelable_and_takes_no_more_messages(server: Running) -> None:
    async def main() -> None:
        async with connect(server, streaming=False) as client:
            done = await send(client, "hello")
        return done.id

    task_id = asyncio.run(main())
    cancel = rpc(
        server, {"jsonrpc": "2.0", "id": 2, "method": "CancelTask", "params": {"id": task_id}}
    )
    assert cancel.json()["error"]["code"] == -32002
    more = rpc(
        server,
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "SendMessage",
            "params": message_params("more", taskId=task_id),
        },
    )
    assert more.json()["error"]["code"] == -32004
    assert httpx.get(f"{server.url}/healthz").json()["runs"] == 0


def test_a_body_past_the_limit_is_413() -> None:
    with serving(app(echo_agent(), max_body_bytes=2000)) as running:
        big = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "SendMessage",
            "params": message_params("x" * 5000),
        }
        refused = rpc(running, big)
        assert refused.status_code == 413
        assert refused.json()["error"]["code"] == -32600
        assert httpx.get(f"{running.url}/healthz").json()["runs"] == 0


class Shout(Module):
    """Says what it hears, louder."""

    async def forward(self, text: str) -> str:
        return text.upper() + "!"


def test_a_module_that_is_no_agent_answers_too() -> None:
    with serving(app(Shout())) as running:

        async def main() -> None:
            async with connect(running) as client:
                events = [e async for e in client.send_message(message("hello"))]
            pieces = [e.artifact_update for e in events if e.HasField("artifact_update")]
            assert [p.text for p in pieces[-1].artifact.parts] == ["HELLO!"]

        asyncio.run(main())
        card = httpx.get(f"{running.url}/.well-known/agent-card.json").json()
        assert card["name"] == "Shout"
        assert card["description"] == "Says what it hears, louder."


def test_mounted_under_a_prefix_the_card_names_the_address_it_is_reached_at() -> None:
    service = Starlette(routes=[Mount("/agents/echo", app=app(echo_agent(), name="echo"))])
    with serving(service) as running:

        async def main() -> None:
            async with httpx.AsyncClient(timeout=60) as http:
                client = await create_client(
                    f"{running.url}/agents/echo",
                    client_config=ClientConfig(httpx_client=http, streaming=False),
                )
                task = await send(client, "through the mount")
            assert answer(task) == "heard: through the mount"

        asyncio.run(main())
        card = httpx.get(f"{running.url}/agents/echo/.well-known/agent-card.json").json()
        assert card["supportedInterfaces"][0]["url"] == f"{running.url}/agents/echo/a2a"


def test_a_running_task_takes_no_message() -> None:
    gate = Gate()
    with serving(app(gated_agent(gate))) as running:

        async def main() -> None:
            async with connect(running) as client, connect(running, streaming=False) as plain:
                stream = client.send_message(message("first"))
                task_id = (await anext(stream)).task.id
                await asyncio.to_thread(wait_for, lambda: gate.started == 1)
                with pytest.raises(UnsupportedOperationError) as refused:
                    await send(plain, "second", task_id=task_id)
                assert "still running" in str(refused.value)
                gate.open.set()
                rest = [e async for e in stream]
            assert rest[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
            assert gate.started == 1

        asyncio.run(main())
        assert httpx.get(f"{running.url}/healthz").json()["runs"] == 0


def test_a_body_not_sent_as_json_or_without_the_version_is_refused(server: Running) -> None:
    body = {"jsonrpc": "2.0", "id": 4, "method": "GetTask", "params": {"id": "x"}}
    text = httpx.post(
        f"{server.url}/a2a",
        content=json.dumps(body),
        headers={"content-type": "text/plain", "A2A-Version": "1.0"},
    )
    assert text.status_code == 415
    assert text.json()["error"]["code"] == -32600
    unversioned = httpx.post(f"{server.url}/a2a", json=body)  # taken as A2A 0.3
    assert unversioned.json()["error"]["code"] == -32009
    assert "1.0" in unversioned.json()["error"]["message"]


def test_many_callers_at_once_on_one_context_never_cross(store: SQLiteSessionStore) -> None:
    """Six callers at once, three turns each, all naming the same contextId, on a real SQLite
    file: each hears only its own turns."""
    tokens = {f"token-of-user-{n}": f"user{n}" for n in range(6)}
    with serving(app(echo_agent(), store=store, tokens=tokens)) as running:

        async def talk(token: str) -> str:
            async with connect(running, token, streaming=False) as client:
                task = None
                for turn in range(3):
                    task = await send(client, f"{token} {turn}", context_id="same-id")
                assert task is not None
                return answer(task)

        async def main() -> list[str]:
            return await asyncio.gather(*(talk(token) for token in tokens))

        answers = asyncio.run(main())
        for token, said_back in zip(tokens, answers, strict=True):
            assert said_back == f"heard: {token} 0 | {token} 1 | {token} 2"
        assert httpx.get(f"{running.url}/healthz").json()["runs"] == 0
