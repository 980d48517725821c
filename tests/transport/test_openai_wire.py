"""Requests sent without the SDK's request transform are the requests the SDK sends.

Each scenario runs the same call three times on the fake server over real HTTP: with
``sdk_requests=True`` (the SDK's typed method, transform and response objects included, or for
``/rerank``, which has none, its ``client.post``: what promptimus sent before), then twice on a
provider that posts its JSON as built (the first request goes through the SDK's low-level
``client.post``, the second straight through the SDK's HTTP client, reusing the request the SDK
built). The server must receive the same path, query, headers and JSON each time (the same
Content-Length too: the same spacing and escaping; only the order of the body's keys may differ);
errors must come out the same on both paths.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from promptimus.dto import ImageContent, Message, MessageRole, ToolFunction, ToolRequest
from promptimus.embedders import OpenAILikeEmbedder
from promptimus.errors import PromptimusError, UnknownRequestOption
from promptimus.llms import OpenAILike, aaccumulate
from promptimus.rerankers import OpenAILikeReranker
from promptimus.testing import FakeOpenAIServer, Fault
from promptimus.tools import Tool
from promptimus.transport import RetryPolicy
from promptimus.transport.event_stream import SSEDecoder
from promptimus.transport.openai_wire import OpenAIConnection
from promptimus.vector_stores.base import SearchHit

Provider = OpenAILike | OpenAILikeEmbedder | OpenAILikeReranker


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def chat(srv: FakeOpenAIServer, **kwargs: Any) -> OpenAILike:
    kwargs.setdefault("retry", RetryPolicy(max_retries=0))
    return OpenAILike(
        "test-model", api_key=srv.api_key, base_url=srv.base_url, timeout=5.0, **kwargs
    )


def embedder(srv: FakeOpenAIServer, **kwargs: Any) -> OpenAILikeEmbedder:
    kwargs.setdefault("retry", RetryPolicy(max_retries=0))
    return OpenAILikeEmbedder(
        "fake-embedding", api_key=srv.api_key, base_url=srv.base_url, timeout=5.0, **kwargs
    )


def reranker(srv: FakeOpenAIServer, **kwargs: Any) -> OpenAILikeReranker:
    kwargs.setdefault("retry", RetryPolicy(max_retries=0))
    kwargs.setdefault("api_key", srv.api_key)
    return OpenAILikeReranker("fake-rerank", base_url=srv.base_url, timeout=5.0, **kwargs)


def user(text: str, **kwargs: Any) -> Message:
    return Message(role=MessageRole.USER, content=text, **kwargs)


def weather(city: str, unit: str = "celsius") -> str:
    """Today's weather in a city.

    Args:
        city: The city name.
    """
    return f"18 {unit} in {city}"


class Answer(BaseModel):
    city: str
    temperature: float
    tags: list[str]


SYSTEM = Message(role=MessageRole.SYSTEM, content="You are terse.")
TOOL_HISTORY = [
    SYSTEM,
    user("Weather in Paris and Oslo?"),
    Message(
        role=MessageRole.ASSISTANT,
        content="",
        tool_calls=[
            ToolRequest(
                id="call_1", function=ToolFunction(name="weather", arguments='{"city":"Paris"}')
            ),
            ToolRequest(
                id="call_2", function=ToolFunction(name="weather", arguments='{"city":"Oslo"}')
            ),
        ],
    ),
    Message(role=MessageRole.TOOL, content="18 celsius in Paris", tool_call_id="call_1"),
    Message(role=MessageRole.TOOL, content="9 celsius in Oslo", tool_call_id="call_2"),
]
TOOLS = [Tool(weather).to_openai()]
STRUCTURED = {
    "type": "json_schema",
    "json_schema": {"name": "Answer", "schema": Answer.model_json_schema(), "strict": True},
}
PNG = ImageContent.from_buffer(b"\x89PNG fake image", detail="low")
HITS = [
    SearchHit("d0", "Bonjour à Paris ✓", 0.1, {}),
    SearchHit("d1", 'The capital of France is "Paris"', 0.2, {}),
    SearchHit("d2", "Oslo\nin winter", 0.3, {}),
]


@dataclass(frozen=True)
class Scenario:
    name: str
    make: Callable[..., Provider]
    call: Callable[[Any], Awaitable[object]]
    direct: bool = True  # whether later requests skip the SDK's request building
    options: dict[str, Any] | None = None  # provider options for every run

    def provider(self, srv: FakeOpenAIServer, **kwargs: Any) -> Provider:
        return self.make(srv, **(self.options or {}), **kwargs)


SCENARIOS = [
    Scenario("chat", chat, lambda llm: llm.achat([SYSTEM, user("hi")])),
    Scenario(
        "options and unicode",
        chat,
        lambda llm: llm.achat(
            [user('Grüße, 你好 🚀 "quoted" \\ back\nslash')], stop=["\n\n"], top_p=0.5
        ),
        options={"call_kwargs": {"temperature": 0, "max_tokens": 50, "seed": 7}},
    ),
    Scenario(
        "tools",
        chat,
        lambda llm: llm.achat(
            TOOL_HISTORY, tools=TOOLS, tool_choice="auto", parallel_tool_calls=False
        ),
    ),
    Scenario(
        "images",
        chat,
        lambda llm: llm.achat(
            [user("What is this?", images=[ImageContent(url="https://x.test/cat.jpg"), PNG])]
        ),
    ),
    Scenario(
        "structured output",
        chat,
        lambda llm: llm.achat([SYSTEM, user("Paris?")], response_format=STRUCTURED),
    ),
    Scenario(
        "streaming with tools",
        chat,
        lambda llm: aaccumulate(llm.astream(TOOL_HISTORY, tools=TOOLS, max_completion_tokens=99)),
    ),
    Scenario(
        "streaming without stream options",
        chat,
        lambda llm: aaccumulate(llm.astream([user("hi")], stream_options=None)),
    ),
    Scenario(
        "extra_body merged over the fields",
        chat,
        lambda llm: llm.achat(
            [user("hi")], extra_body={"top_k": 20, "temperature": 0.5}, seed=openai.NOT_GIVEN
        ),
        options={"call_kwargs": {"temperature": 0}},
    ),
    Scenario(
        "per-call headers, query and timeout",
        chat,
        lambda llm: llm.achat(
            [user("hi")],
            extra_headers={"X-Request-Tag": "abc"},
            extra_query={"tenant": "t1"},
            timeout=7.0,
        ),
        direct=False,
    ),
    Scenario(
        "client options",
        chat,
        lambda llm: llm.achat([user("hi")]),
        options={
            "organization": "org-1",
            "project": "proj-1",
            "default_headers": {"X-Team": "search"},
            "default_query": {"api-version": "2025-01-01"},
        },
    ),
    Scenario(
        "a client option that may change requests",
        chat,
        lambda llm: llm.achat([user("hi")]),
        direct=False,
        options={"admin_api_key": "sk-admin-not-sent"},
    ),
    Scenario(
        "embeddings",
        embedder,
        lambda emb: emb.aembed_batch(["alpha", "béta ✓"]),
        options={"dimensions": 8},
    ),
    Scenario(
        "embeddings with options",
        embedder,
        lambda emb: emb.aembed("gamma"),
        options={"call_kwargs": {"user": "u-1", "extra_body": {"truncate": "END"}}},
    ),
    Scenario("rerank", reranker, lambda rr: rr.rerank("capital of France?", HITS, top_n=2)),
    Scenario(
        "rerank without a key, with headers and body options",
        reranker,
        lambda rr: rr.rerank("Paris", HITS),
        # body fields the chat path would take for request options stay body fields here
        options={
            "api_key": None,
            "api_key_env": None,
            "headers": {"X-Team": "search"},
            "call_kwargs": {"return_documents": False, "timeout": 3},
            "extra_body": {"truncate": True},
        },
    ),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_the_server_receives_what_the_sdk_sends(
    srv: FakeOpenAIServer, scenario: Scenario
) -> None:
    await scenario.call(scenario.provider(srv, sdk_requests=True))
    provider = scenario.provider(srv)
    await scenario.call(provider)  # the SDK builds this one (its low-level path)
    await scenario.call(provider)  # and this one reuses it, when the client allows
    reference, built, reused = srv.requests[-3:]
    assert reference.method == "POST" and reference.body
    for request in (built, reused):
        assert (request.path, request.query) == (reference.path, reference.query)
        assert request.json == reference.json
        assert request.headers == reference.headers  # Content-Length: the same bytes
    paths = provider._factory.connection().direct_paths
    assert paths == ({reference.path.removeprefix("/v1")} if scenario.direct else set())


async def test_the_sdk_path_never_reuses_a_request(srv: FakeOpenAIServer) -> None:
    llm = chat(srv, sdk_requests=True)
    for _ in range(2):
        await llm.achat([user("hi")])
        await aaccumulate(llm.astream([user("hi")]))
    assert llm._factory.connection().direct_paths == frozenset()


async def test_the_reused_request_carries_the_clients_cookies_of_the_moment(
    srv: FakeOpenAIServer,
) -> None:
    http = openai.DefaultAsyncHttpxClient(cookies={"session": "s1"})
    llm = chat(srv, http_client=http)
    await llm.achat([user("hi")])
    http.cookies.set("route", "r2")  # as a load balancer's Set-Cookie would
    await llm.achat([user("hi")])
    assert srv.requests[0].headers["cookie"] == "session=s1"
    assert sorted(srv.requests[1].headers["cookie"].split("; ")) == ["route=r2", "session=s1"]
    assert llm._factory.connection().direct_paths == {"/chat/completions"}
    await http.aclose()


async def test_a_client_that_sends_idempotency_keys_never_reuses_a_request(
    srv: FakeOpenAIServer,
) -> None:
    http = openai.DefaultAsyncHttpxClient()
    client = openai.AsyncOpenAI(api_key=srv.api_key, base_url=srv.base_url, http_client=http)
    client._idempotency_header = "Idempotency-Key"  # as SDKs for other APIs do: one per request
    connection = OpenAIConnection(client, http, direct=True)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    for _ in range(2):
        await connection.post("/chat/completions", body)
    keys = [request.headers["idempotency-key"] for request in srv.requests]
    assert len(set(keys)) == 2
    assert not connection.direct and connection.direct_paths == frozenset()
    await client.close()


@pytest.mark.parametrize("sdk_requests", [False, True])
async def test_an_option_the_sdk_does_not_take_is_refused_before_sending(
    srv: FakeOpenAIServer, sdk_requests: bool
) -> None:
    llm = chat(srv, sdk_requests=sdk_requests)
    with pytest.raises(UnknownRequestOption, match=r"top_k\. Pass .* extra_body") as raised:
        await llm.achat([user("hi")], top_k=5)
    assert isinstance(raised.value, TypeError)  # what the SDK's own methods raise
    with pytest.raises(UnknownRequestOption, match="top_k"):
        await aaccumulate(llm.astream([user("hi")], top_k=5))
    with pytest.raises(UnknownRequestOption, match="normalize"):
        await embedder(srv, call_kwargs={"normalize": True}, sdk_requests=sdk_requests).aembed("x")
    assert srv.requests == []


# --- errors: the same on both paths ---------------------------------------------------------

CHAT_FAULTS = {
    "400": Fault.status(400),
    "401 quoting the key": Fault.echo_key(),
    "404": Fault.status(404),
    "422 rejected field": Fault.request_rejected("fastapi", field="response_format.type"),
    "429": Fault.status(429, retry_after=0),
    "500": Fault.status(500),
    "context overflow": Fault.context_overflow(dialect="llama.cpp"),
    "dropped connection": Fault.drop(),
    "html page": Fault.malformed("html"),
    "invalid json": Fault.malformed("invalid_json"),
    "null choices": Fault.malformed("null_choices"),
    "empty answer": Fault.malformed("empty_answer"),
    "cut body": Fault.cut(),
}
STREAM_FAULTS = {
    **{name: CHAT_FAULTS[name] for name in ("401 quoting the key", "429", "context overflow")},
    "dropped after two chunks": Fault.drop(after_chunks=2),
    "cut after two chunks": Fault.cut(after_chunks=2),
    "cut mid-body": Fault.cut(after_chunks=2, clean=False),
    "error event": Fault.stream_error(after_chunks=2),
    "error event before output": Fault.stream_error(),
    "error line the SDK skips": Fault.stream_error(after_chunks=2, sse_field="error"),
    "overflow mid-stream": Fault.context_overflow(mid_stream=True),
    "invalid json chunk": Fault.malformed("invalid_json", after_chunks=2),
    "json list chunk": Fault.malformed("json_list"),
    "html page": Fault.malformed("html"),
    "no choices": Fault.malformed("no_choices"),
}
EMBEDDING_FAULTS = {
    name: CHAT_FAULTS[name] for name in ("401 quoting the key", "500", "html page", "invalid json")
} | {"ragged": Fault.malformed("ragged"), "short data": Fault.malformed("short_data")}
RERANK_FAULTS = {
    name: CHAT_FAULTS[name]
    for name in ("401 quoting the key", "429", "500", "dropped connection", "html page")
} | {
    name: Fault.malformed(name)
    for name in ("invalid_json", "null_results", "no_results", "bad_index", "wrong_types")
}


async def failure(
    srv: FakeOpenAIServer, provider: Provider, fault: Fault, call: Callable[[], Awaitable[object]]
) -> PromptimusError:
    route = {OpenAILikeEmbedder: srv.embeddings, OpenAILikeReranker: srv.rerank}.get(
        type(provider), srv.chat
    )
    route.script(fault)
    with pytest.raises(PromptimusError) as raised:
        await call()
    text = "".join(traceback.format_exception(raised.value))
    assert srv.api_key not in text
    return raised.value


def same_error(direct: BaseException, sdk: BaseException) -> None:
    assert type(direct) is type(sdk)
    assert str(direct) == str(sdk)
    assert type(direct.__cause__) is type(sdk.__cause__)
    assert str(direct.__cause__) == str(sdk.__cause__)


async def check_fault(
    srv: FakeOpenAIServer,
    make: Callable[..., Provider],
    fault: Fault,
    call: Callable[[Any], Awaitable[object]],
) -> None:
    sdk = make(srv, sdk_requests=True)
    expected = await failure(srv, sdk, fault, lambda: call(sdk))
    direct = make(srv)
    await call(direct)  # the next request reuses this one
    got = await failure(srv, direct, fault, lambda: call(direct))
    same_error(got, expected)
    assert direct._factory.connection().direct_paths  # the fault met the reused request
    await call(direct)  # and the connection pool is fine afterwards


@pytest.mark.parametrize("fault", CHAT_FAULTS.values(), ids=CHAT_FAULTS)
async def test_chat_errors_are_the_same_on_both_paths(srv: FakeOpenAIServer, fault: Fault) -> None:
    await check_fault(srv, chat, fault, lambda llm: llm.achat([user("hi")]))


@pytest.mark.parametrize("fault", STREAM_FAULTS.values(), ids=STREAM_FAULTS)
async def test_stream_errors_are_the_same_on_both_paths(
    srv: FakeOpenAIServer, fault: Fault
) -> None:
    await check_fault(srv, chat, fault, lambda llm: aaccumulate(llm.astream([user("hi there")])))


@pytest.mark.parametrize("fault", EMBEDDING_FAULTS.values(), ids=EMBEDDING_FAULTS)
async def test_embedding_errors_are_the_same_on_both_paths(
    srv: FakeOpenAIServer, fault: Fault
) -> None:
    await check_fault(srv, embedder, fault, lambda emb: emb.aembed_batch(["a", "b"]))


@pytest.mark.parametrize("fault", RERANK_FAULTS.values(), ids=RERANK_FAULTS)
async def test_rerank_errors_are_the_same_on_both_paths(
    srv: FakeOpenAIServer, fault: Fault
) -> None:
    await check_fault(srv, reranker, fault, lambda rr: rr.rerank("Paris", HITS))


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_timeout_is_the_same_on_both_paths(srv: FakeOpenAIServer, streamed: bool) -> None:
    def make(srv: FakeOpenAIServer, **kwargs: Any) -> OpenAILike:
        return OpenAILike(
            "m",
            api_key=srv.api_key,
            base_url=srv.base_url,
            timeout=1.0,
            retry=RetryPolicy(max_retries=0),
            **kwargs,
        )

    async def call(llm: OpenAILike) -> object:
        if streamed:
            return await aaccumulate(llm.astream([user("hi there")]))
        return await llm.achat([user("hi")])

    await check_fault(srv, make, Fault.stall(after_chunks=1 if streamed else 0), call)


async def test_retries_and_retry_after_work_on_the_reused_request(srv: FakeOpenAIServer) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    llm = chat(srv, retry=RetryPolicy(max_retries=3, sleep=sleep))
    await llm.achat([user("warm")])
    srv.chat.script(Fault.status(429, retry_after=2), Fault.status(503), Fault.drop(), "done")
    reply = await llm.achat([user("hi")])
    assert reply.content == "done"
    assert waits[0] == 2.0 and len(waits) == 3
    assert len(srv.chat.requests) == 5


# --- the event-stream decoder ---------------------------------------------------------------


def decoded(*pieces: bytes) -> list[bytes]:
    decoder = SSEDecoder()
    events = [event for piece in pieces for event in decoder.feed(piece)]
    return events + decoder.finish()


def test_events_split_anywhere_decode_the_same() -> None:
    body = (
        b'data: {"a": 1}\r\n\r\n: a comment\n\nevent: x\ndata: {"b":\ndata: 2}\n\rdata: [DONE]\n\n'
    )
    expected = [b'{"a": 1}', b'{"b":\n2}', b"[DONE]"]
    assert decoded(body) == expected
    for cut in range(1, len(body)):
        assert decoded(body[:cut], body[cut:]) == expected, cut
    assert decoded(*(body[i : i + 1] for i in range(len(body)))) == expected


def test_events_without_data_are_skipped_and_an_unfinished_one_is_dropped() -> None:
    assert decoded(b"event: ping\n\nid: 3\nretry: 10\n\n") == []
    assert decoded(b"data\n\n", b"data:x\n\r") == [b"", b"x"]  # a final CR ends the event
    assert decoded(b'data: {"a": 1}\n\ndata: {"cut') == [b'{"a": 1}']
