"""OpenAILike through the real openai SDK against the fake OpenAI server (no SDK mocks)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from promptimus.dto import ImageContent, Message, MessageRole, ToolFunction, ToolRequest, Usage
from promptimus.embedders import OpenAILikeEmbedder
from promptimus.errors import (
    InvalidArgument,
    ProviderConfigError,
    ProviderResponseError,
    ProviderUnavailable,
    RetryBudgetExhausted,
    UnencodableText,
)
from promptimus.llms import CachedLLM, MemoryCache, OllamaProvider, OpenAILike, aaccumulate
from promptimus.testing import FakeOpenAIServer, Fault, Reply, ToolCall
from promptimus.transport import RateLimiter, Reservation, RetryPolicy

if TYPE_CHECKING:
    from virtual_clock import VirtualClock

STALL_TIMEOUT = 1.0
"""Client timeout for tests that make the server stall: it must fire on the stall, and a healthy
answer must still arrive within it on a fully loaded machine (so not a few tenths of a second)."""

API_FIELDS = {"role", "content", "tool_calls", "tool_call_id", "name"}


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def make_llm(srv: FakeOpenAIServer, **kwargs: Any) -> OpenAILike:
    kwargs.setdefault("retry", RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.01))
    kwargs.setdefault("timeout", 5.0)
    return OpenAILike("test-model", api_key=srv.api_key, base_url=srv.base_url, **kwargs)


def user(text: str, **kw: Any) -> Message:
    return Message(role=MessageRole.USER, content=text, **kw)


RICH = Reply(
    content="It is sunny.",
    tool_calls=[ToolCall("weather", {"city": "Paris"}, id="call_w")],
    reasoning="Need the weather tool.",
    usage={
        "prompt_tokens": 20,
        "completion_tokens": 7,
        "total_tokens": 27,
        "cached_tokens": 5,
        "reasoning_tokens": 3,
    },
)


# --- chat and mapping ----------------------------------------------------------------------------


async def test_chat_returns_the_server_reply(srv: FakeOpenAIServer) -> None:
    srv.chat.script("hello from the server")
    llm = make_llm(srv)
    reply = await llm.achat([user("hi")])
    assert reply.role == MessageRole.ASSISTANT
    assert reply.content == "hello from the server"
    assert reply.finish_reason == "stop"
    assert srv.chat.requests[0]["model"] == "test-model"
    echo = await llm.achat([user("ping")])
    assert echo.content == "echo: ping"


async def test_reply_maps_tool_calls_reasoning_and_usage(srv: FakeOpenAIServer) -> None:
    srv.chat.script(RICH)
    llm = make_llm(srv)
    reply = await llm.achat([user("weather in Paris?")])
    assert reply.content == "It is sunny."
    assert reply.reasoning == "Need the weather tool."
    assert reply.tool_calls is not None
    call = reply.tool_calls[0]
    assert call.id == "call_w" and call.function.name == "weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert reply.usage == Usage(
        prompt_tokens=20, completion_tokens=7, total_tokens=27, cached_tokens=5, reasoning_tokens=3
    )


async def test_usage_and_request_count_accumulate(srv: FakeOpenAIServer) -> None:
    srv.chat.script(RICH, RICH)
    llm = make_llm(srv)
    await asyncio.gather(llm.achat([user("a")]), llm.achat([user("b")]))
    assert llm.request_count == 2
    assert llm.usage.total_tokens == 54
    assert llm.usage.cached_tokens == 10 and llm.usage.reasoning_tokens == 6


async def test_call_kwargs_are_defaults_that_calls_override(srv: FakeOpenAIServer) -> None:
    llm = make_llm(srv, call_kwargs={"temperature": 0.1, "max_tokens": 50})
    await llm.achat([user("a")])
    await llm.achat([user("b")], temperature=0.9)
    first, second = srv.chat.requests
    assert (first["temperature"], first["max_tokens"]) == (0.1, 50)
    assert (second["temperature"], second["max_tokens"]) == (0.9, 50)


# --- request serialisation -----------------------------------------------------------------------


async def test_text_only_content_is_a_plain_string_and_metadata_is_never_sent(
    srv: FakeOpenAIServer,
) -> None:
    history = [
        Message(role=MessageRole.SYSTEM, content="Be brief."),
        user("hi"),
        Message(
            role=MessageRole.ASSISTANT,
            content="hello",
            reasoning="secret chain of thought",
            usage=Usage(prompt_tokens=1, total_tokens=1),
            finish_reason="stop",
        ),
        user("again"),
    ]
    await make_llm(srv).achat(history)
    sent = srv.chat.requests[0]["messages"]
    assert [m["content"] for m in sent] == ["Be brief.", "hi", "hello", "again"]
    for message in sent:
        assert set(message) <= API_FIELDS
    raw = json.dumps(srv.chat.requests[0])
    assert "secret chain of thought" not in raw
    assert "usage" not in raw and "finish_reason" not in raw and "images" not in raw


async def test_images_become_content_parts(srv: FakeOpenAIServer) -> None:
    png = ImageContent.from_buffer(b"\x89PNG fake", detail="low")
    history = [user("what is this?", images=[ImageContent(url="https://x.test/cat.jpg"), png])]
    await make_llm(srv).achat(history)
    content = srv.chat.requests[0]["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}},
        {"type": "image_url", "image_url": {"url": png.url, "detail": "low"}},
    ]


async def test_tool_calls_and_tool_results_are_serialised(srv: FakeOpenAIServer) -> None:
    history = [
        user("add 2 and 3"),
        Message(
            role=MessageRole.ASSISTANT,
            tool_calls=[
                ToolRequest(id="c1", function=ToolFunction(name="add", arguments='{"a":2,"b":3}'))
            ],
        ),
        Message(role=MessageRole.TOOL, content="5", tool_call_id="c1"),
    ]
    await make_llm(srv).achat(history)
    _, assistant, tool = srv.chat.requests[0]["messages"]
    assert assistant["role"] == "assistant"
    assert assistant["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a":2,"b":3}'}}
    ]
    assert not assistant.get("content")
    assert tool == {"role": "tool", "content": "5", "tool_call_id": "c1"}


# --- streaming -----------------------------------------------------------------------------------


async def test_stream_yields_deltas_that_add_up_to_the_chat_reply(srv: FakeOpenAIServer) -> None:
    srv.chat.script(RICH, RICH)
    llm = make_llm(srv)
    chat = await llm.achat([user("q")])
    deltas = [d async for d in llm.astream([user("q")])]
    assert len(deltas) > 2
    assert any(d.content for d in deltas)
    assert any(d.tool_calls for d in deltas)
    streamed = await aaccumulate(_replay(deltas))
    assert streamed == chat
    body = srv.chat.requests[1]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert llm.request_count == 2 and llm.usage.total_tokens == 54


async def _replay(items: list[Any]) -> Any:
    for item in items:
        yield item


async def test_stream_plain_text(srv: FakeOpenAIServer) -> None:
    srv.chat.script("one two three four")
    message = await aaccumulate(make_llm(srv).astream([user("count")]))
    assert message.content == "one two three four"
    assert message.finish_reason == "stop"


# --- retries -------------------------------------------------------------------------------------


async def test_retry_after_header_is_honoured(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.status(429, retry_after=0.3), "finally")
    llm = make_llm(srv)
    start = time.monotonic()
    reply = await llm.achat([user("x")])
    assert reply.content == "finally"
    assert time.monotonic() - start >= 0.3
    assert len(srv.chat.requests) == 2


async def test_server_error_then_success(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.status(500), "recovered")
    llm = make_llm(srv)
    assert (await llm.achat([user("x")])).content == "recovered"
    assert len(srv.chat.requests) == 2
    assert llm.request_count == 1


async def test_budget_exhausted_names_attempts_and_status(srv: FakeOpenAIServer) -> None:
    srv.chat.script(*[Fault.status(503) for _ in range(3)], "too late")
    llm = make_llm(srv, retry=RetryPolicy(max_retries=2, base_delay=0.001, max_delay=0.01))
    with pytest.raises(RetryBudgetExhausted, match=r"after 3 attempts.*503") as info:
        await llm.achat([user("x")])
    assert info.value.__cause__ is not None
    assert len(srv.chat.requests) == 3


async def test_bad_request_is_not_retried(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.status(400), "never")
    with pytest.raises(ProviderResponseError, match="400") as info:
        await make_llm(srv).achat([user("x")])
    assert srv.api_key not in str(info.value)
    assert len(srv.chat.requests) == 1


async def test_dropped_connection_is_retried(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.drop(), "after the drop")
    assert (await make_llm(srv).achat([user("x")])).content == "after the drop"


async def test_malformed_body_is_a_response_error(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.malformed(), Fault.malformed(), "never")
    with pytest.raises(ProviderResponseError, match="not valid JSON"):
        await make_llm(srv).achat([user("x")])
    assert len(srv.chat.requests) == 2  # retried once


async def test_malformed_body_once_then_a_good_reply(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.malformed(), "second try")
    assert (await make_llm(srv).achat([user("x")])).content == "second try"
    assert len(srv.chat.requests) == 2


async def test_stream_is_not_retried_after_output_started(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.stall(after_chunks=2), "never")
    llm = make_llm(srv, timeout=STALL_TIMEOUT)
    received = []
    with pytest.raises(ProviderUnavailable, match="interrupted"):
        async for delta in llm.astream([user("x")]):
            received.append(delta)
    assert received  # output had started...
    assert len(srv.chat.requests) == 1  # ...so no second request was made


async def test_stream_failing_before_first_chunk_is_retried(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.status(503), "streamed fine")
    message = await aaccumulate(make_llm(srv).astream([user("x")]))
    assert message.content == "streamed fine"
    assert len(srv.chat.requests) == 2


# --- limits --------------------------------------------------------------------------------------


class RecordingLimiter(RateLimiter):
    """A rate limiter that keeps the start time of every request it admits."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.admitted: list[float] = []

    async def acquire(self, weight: float = 1.0) -> Reservation:
        reservation = await super().acquire(weight)
        self.admitted.append(reservation.start)
        return reservation


async def test_requests_per_period_limit_under_a_burst(
    srv: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    # Virtual time: the limiter's waits are recorded, not spent, so the check is exact and does
    # not depend on how fast requests travel on a busy machine.
    limiter = RecordingLimiter(3, 60.0, clock=virtual_clock, sleep=virtual_clock.sleep)
    llm = make_llm(srv, requests_per_minute=limiter)
    replies = await asyncio.gather(*(llm.achat([user(str(i))]) for i in range(7)))
    assert sorted(r.content for r in replies) == sorted(f"echo: {i}" for i in range(7))
    assert len(srv.chat.requests) == 7
    t0 = limiter.admitted[0]
    # 3 per minute: three at once, three when the window has rolled, the last one a minute later.
    assert [a - t0 for a in sorted(limiter.admitted)] == [0, 0, 0, 60, 60, 60, 120]
    assert sum(virtual_clock.sleeps) == pytest.approx(120)


def hold_until_overlap(srv: FakeOpenAIServer, total: int, enough: int) -> Any:
    """A responder that keeps each request open until ``enough`` requests are in flight at once,
    or every one of ``total`` requests has arrived (then no more can join)."""

    async def respond(body: dict[str, Any]) -> str:
        async def overlap() -> None:
            # Polled: the server's counters have no event to wait on.
            while srv.in_flight < enough and len(srv.chat.requests) < total:  # noqa: ASYNC110
                await asyncio.sleep(0.002)

        await asyncio.wait_for(overlap(), 30)  # generous: fails instead of hanging
        await asyncio.sleep(0.02)  # stay open a moment so a request over the cap would show
        return f"answer {body['messages'][-1]['content']}"

    return respond


async def test_max_concurrency_caps_in_flight_requests(srv: FakeOpenAIServer) -> None:
    # Counted by the server, not timed: 6 requests held open until two overlap, cap of 2.
    srv.chat.respond_with(hold_until_overlap(srv, total=6, enough=2))
    llm = make_llm(srv, max_concurrency=2)
    replies = await asyncio.gather(*(llm.achat([user(str(i))]) for i in range(6)))
    assert sorted(r.content for r in replies) == [f"answer {i}" for i in range(6)]
    assert srv.max_in_flight == 2


async def test_without_a_cap_requests_overlap(srv: FakeOpenAIServer) -> None:
    srv.chat.respond_with(hold_until_overlap(srv, total=6, enough=6))
    free = make_llm(srv)
    await asyncio.gather(*(free.achat([user(str(i))]) for i in range(6)))
    assert srv.max_in_flight == 6  # all six were open at once: nothing serialises them


# --- configuration and secrets -------------------------------------------------------------------


async def test_missing_key_says_which_env_var(
    srv: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = OpenAILike("test-model", base_url=srv.base_url)  # constructing is fine without a key
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY"):
        await llm.achat([user("x")])
    with pytest.raises(ProviderConfigError, match="api_key"):
        async for _ in llm.astream([user("x")]):
            pass
    assert srv.chat.requests == []


async def test_key_from_env_is_used_and_never_shown(
    srv: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-env-secret-987654321"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    llm = OpenAILike("test-model", base_url=srv.base_url, max_retries=0)
    await llm.achat([user("x")])
    auth = [r for r in srv.requests if r.path.endswith("/chat/completions")][-1].headers
    assert auth["authorization"] == f"Bearer {secret}"
    assert secret not in repr(llm)
    assert repr(llm) == f"OpenAILike(model_name='test-model', base_url='{srv.base_url}')"


def test_provider_survives_several_event_loops(srv: FakeOpenAIServer) -> None:
    llm = make_llm(srv, max_concurrency=2, requests_per_minute=100)
    for i in range(3):
        reply = asyncio.run(llm.achat([user(f"loop {i}")]))
        assert reply.content == f"echo: loop {i}"


async def test_ollama_provider_defaults(srv: FakeOpenAIServer) -> None:
    llm = OllamaProvider("llama3.2:3b", base_url=srv.base_url, max_retries=0)
    reply = await llm.achat([user("hi")])
    assert reply.content == "echo: hi"
    assert srv.chat.requests[0]["model"] == "llama3.2:3b"


async def test_stalled_request_times_out_and_is_retried(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.stall(), "second try")
    llm = make_llm(srv, timeout=STALL_TIMEOUT)
    assert (await llm.achat([user("x")])).content == "second try"
    assert len(srv.chat.requests) == 2


async def test_connection_dropped_mid_stream_is_raised_not_retried(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.drop(after_chunks=2), "never")
    with pytest.raises(ProviderUnavailable, match="stream interrupted"):
        async for _ in make_llm(srv).astream([user("a b c d e f")]):
            pass
    assert len(srv.chat.requests) == 1


async def test_unauthorized_error_points_at_the_key(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.status(401))
    with pytest.raises(ProviderResponseError, match=r"HTTP 401.*API key"):
        await make_llm(srv).achat([user("x")])


def test_a_provider_collected_during_a_later_event_loop_leaves_no_task_error(
    srv: FakeOpenAIServer,
) -> None:
    # a provider made inside one `asyncio.run()` and garbage-collected during the next: the
    # SDK's default HTTP client wrapper scheduled its close on the new loop, which failed on the
    # old loop's sockets ("Task exception was never retrieved ... Event loop is closed")
    import gc

    kept: list[OpenAILike] = []
    errors: list[dict[str, Any]] = []

    async def first() -> None:
        llm = make_llm(srv)
        assert (await llm.achat([user("hi")])).content
        kept.append(llm)

    async def second() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: errors.append(ctx))
        kept.clear()
        gc.collect()  # the first loop's client goes now, with this loop running
        for _ in range(5):
            await asyncio.sleep(0)
        gc.collect()  # a failed close task, if any, reports when it is collected

    asyncio.run(first())
    asyncio.run(second())
    assert errors == []


# --- text UTF-8 cannot encode ----------------------------------------------------------------


@pytest.mark.parametrize("cached", [False, True], ids=["direct", "through a response cache"])
@pytest.mark.parametrize("stream", [False, True], ids=["achat", "astream"])
async def test_a_lone_surrogate_is_a_named_error_before_anything_is_sent(
    srv: FakeOpenAIServer, cached: bool, stream: bool
) -> None:
    srv.chat.respond_with(lambda body: Reply("ok"))
    llm: Any = make_llm(srv)
    if cached:
        llm = CachedLLM(llm, MemoryCache())
    history = [user("fine"), user("x \ud800 y")]

    with pytest.raises(UnencodableText, match=r"messages\[1\]\.content .*'\\ud800' after 'x '"):
        if stream:
            await aaccumulate(llm.astream(history, temperature=0))
        else:
            await llm.achat(history, temperature=0)

    assert srv.chat.requests == []
    assert (await llm.achat([user("fine")], temperature=0)).content == "ok"


async def test_a_lone_surrogate_in_a_tool_call_or_a_tool_schema_is_found_too(
    srv: FakeOpenAIServer,
) -> None:
    call = ToolRequest(id="c1", function=ToolFunction(name="f", arguments='{"p": "\udcff"}'))
    history = [user("hi"), Message(role=MessageRole.ASSISTANT, content="", tool_calls=[call])]
    with pytest.raises(UnencodableText) as info:
        await make_llm(srv).achat(history)
    assert info.value.where == "messages[1].tool_calls[0].function.arguments"
    tool = {"type": "function", "function": {"name": "f", "description": "bad \udc80"}}
    with pytest.raises(UnencodableText, match=r"tools\[0\]\.function\.description"):
        await make_llm(srv).achat([user("hi")], tools=[tool])
    assert srv.chat.requests == []


async def test_an_embedding_of_a_lone_surrogate_is_refused_before_any_batch_is_sent(
    srv: FakeOpenAIServer,
) -> None:
    embedder = OpenAILikeEmbedder(
        "fake-embedding", api_key=srv.api_key, base_url=srv.base_url, batch_size=2
    )
    with pytest.raises(UnencodableText, match=r"texts\[5\]"):
        await embedder.aembed_batch([*["ok"] * 5, "bad \ud800"])
    with pytest.raises(UnencodableText, match="text holds"):
        await embedder.aembed("\udfff")
    assert srv.embeddings.requests == []


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -1.0, 0, "10", True])
@pytest.mark.parametrize("make", ["OpenAILike", "Anthropic", "OpenAILikeEmbedder"])
def test_every_endpoint_refuses_a_timeout_it_cannot_use(make: str, timeout: Any) -> None:
    from promptimus.embedders import OpenAILikeEmbedder
    from promptimus.llms import Anthropic

    kinds: dict[str, Any] = {
        "OpenAILike": OpenAILike,
        "Anthropic": Anthropic,
        "OpenAILikeEmbedder": OpenAILikeEmbedder,
    }
    with pytest.raises(InvalidArgument, match=f"{make}: timeout"):
        kinds[make]("some-model", api_key="sk-x", timeout=timeout)
