"""Anthropic through the real anthropic SDK against the fake Messages API server (no SDK mocks):
every test checks what the server received."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import FinalResult, ReasoningDelta
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.agents.run_state import RunState
from promptimus.dto import DocumentContent, ImageContent, Message, MessageRole, ThinkingBlock
from promptimus.errors import (
    ContextWindowExceeded,
    EmptyReply,
    InvalidArgument,
    ProviderConfigError,
    RequestRejected,
    RetryBudgetExhausted,
    StreamInterrupted,
    UnknownRequestOption,
)
from promptimus.llms import Anthropic, CachedLLM, FallbackLLM, MemoryCache, aaccumulate, resolve
from promptimus.modules.structural import StructuralOutput
from promptimus.observe.pricing import check_pricing, cost_of
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import (
    AnthropicReply,
    FakeAnthropicServer,
    Fault,
    Thinking,
    ToolCall,
    anthropic_error,
)
from promptimus.tools import Tool
from promptimus.transport import RetryPolicy


@pytest.fixture
def srv() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


class Waits:
    """Records the waits the retry layer asks for, without spending them."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def make_llm(srv: FakeAnthropicServer, waits: Waits | None = None, **kwargs: Any) -> Anthropic:
    kwargs.setdefault("retry", RetryPolicy(max_retries=3, sleep=waits or Waits()))
    kwargs.setdefault("timeout", 10.0)
    return Anthropic("claude-test", api_key=srv.api_key, base_url=srv.base_url, **kwargs)


def user(text: str, **kwargs: Any) -> Message:
    return Message(role=MessageRole.USER, content=text, **kwargs)


def system(text: str) -> Message:
    return Message(role=MessageRole.SYSTEM, content=text)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# --- one call -----------------------------------------------------------------------------------


async def test_a_reply_and_the_request_the_api_received(srv: FakeAnthropicServer) -> None:
    srv.messages.script(AnthropicReply(content="Hello!", usage={"input_tokens": 7}))
    reply = await make_llm(srv).achat([system("Be brief."), user("hi")], temperature=0)

    assert reply.content == "Hello!" and reply.finish_reason == "stop"
    assert reply.model_name == "claude-test"
    assert reply.usage is not None and reply.usage.prompt_tokens == 7
    sent = srv.messages.requests[0]
    assert sent["system"] == [{"type": "text", "text": "Be brief."}]
    assert sent["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert sent["max_tokens"] == 8192 and sent["temperature"] == 0
    assert "cache_control" not in json.dumps(sent)  # caching is off by default
    headers = srv.requests[0].headers
    assert headers["x-api-key"] == srv.api_key and "anthropic-version" in headers
    assert srv.requests[0].path == "/v1/messages"


async def test_openai_shaped_options_are_translated(srv: FakeAnthropicServer) -> None:
    llm = make_llm(srv, max_tokens=100)
    await llm.achat(
        [user("x")],
        stop="END",
        max_completion_tokens=50,
        tool_choice="required",
        parallel_tool_calls=False,
        tools=[Tool(add).to_openai()],
    )
    sent = srv.messages.requests[0]
    assert sent["stop_sequences"] == ["END"] and sent["max_tokens"] == 50
    assert sent["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert sent["tools"] == [
        {
            "name": "add",
            "description": "Add two integers.",
            "input_schema": Tool(add).parameters_schema,
        }
    ]
    with pytest.raises(UnknownRequestOption, match="seed"):
        await llm.achat([user("x")], seed=1)
    assert len(srv.messages.requests) == 1  # refused before sending


async def test_stream_adds_up_to_the_reply_with_thinking_whole_once_signed(
    srv: FakeAnthropicServer,
) -> None:
    srv.messages.script(
        AnthropicReply(thinking="Two plus two.", content="It is four."),
        AnthropicReply(thinking="Two plus two.", content="It is four."),
    )
    llm = make_llm(srv, thinking=1024)
    deltas = [delta async for delta in llm.astream([user("2+2?")])]
    streamed = await aaccumulate(_replay(deltas))
    plain = await llm.achat([user("2+2?")])

    assert streamed.content == plain.content == "It is four."
    assert streamed.reasoning == plain.reasoning == "Two plus two."
    whole = [delta.thinking for delta in deltas if delta.thinking]
    assert len(whole) == 1 and whole[0][0].signature and whole[0][0].text == "Two plus two."
    assert streamed.finish_reason == "stop" and streamed.usage == plain.usage
    assert srv.messages.requests[0]["stream"] is True
    assert srv.messages.requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 1024}


async def _replay(items: list[Any]) -> Any:
    for item in items:
        yield item


# --- tools and thinking round trips -------------------------------------------------------------


async def test_a_tool_loop_sends_signed_thinking_back_before_its_tool_use(
    srv: FakeAnthropicServer,
) -> None:
    srv.messages.script(
        AnthropicReply(
            thinking=[Thinking("I should add."), Thinking(redacted="ENCRYPTED")],
            tool_calls=[ToolCall("add", {"a": 1, "b": 2}), ToolCall("add", {"a": 3, "b": 4})],
        ),
        "3 and 7.",
    )
    agent = OpenaiToolCallingAgent("You add.", [add]).with_llm(make_llm(srv, thinking=2048))
    reply = await agent("add things")

    assert reply.content == "3 and 7."
    first, second = srv.messages.requests
    assert first["system"] == [{"type": "text", "text": "You add."}]
    assert first["tools"][0]["name"] == "add" and "input_schema" in first["tools"][0]
    assistant, results = second["messages"][1], second["messages"][2]
    kinds = [block["type"] for block in assistant["content"]]
    assert kinds == ["thinking", "redacted_thinking", "tool_use", "tool_use"]
    assert assistant["content"][0]["thinking"] == "I should add."
    assert assistant["content"][0]["signature"].startswith("sig_")
    assert assistant["content"][1] == {"type": "redacted_thinking", "data": "ENCRYPTED"}
    # both results in one user turn, each answering its tool_use
    assert results["role"] == "user" and len(second["messages"]) == 3
    ids = [block["id"] for block in assistant["content"][2:]]
    assert [(r["tool_use_id"], r["content"]) for r in results["content"]] == [
        (ids[0], "3"),
        (ids[1], "7"),
    ]


async def test_a_tool_loop_streams_with_both_agent_types(srv: FakeAnthropicServer) -> None:
    srv.messages.script(
        AnthropicReply(thinking="Use add.", tool_calls=[ToolCall("add", {"a": 2, "b": 2})]),
        "Four.",
    )
    agent = OpenaiToolCallingAgent("p", [add]).with_llm(make_llm(srv, thinking=1024))
    events = [event async for event in agent.stream("2+2")]
    assert isinstance(events[-1], FinalResult) and events[-1].output.content == "Four."
    assert any(isinstance(event, ReasoningDelta) for event in events)
    assistant = srv.messages.requests[1]["messages"][1]["content"]
    assert [block["type"] for block in assistant] == ["thinking", "tool_use"]

    srv.messages.script(
        'Thought: add.\nAction: add\nAction Input: {"a": 1, "b": 1}', "Final Answer: 2"
    )
    react = ToolCallingAgent([add]).with_llm(make_llm(srv))
    answer = [event async for event in react.stream("1+1")][-1]
    assert isinstance(answer, FinalResult) and "2" in answer.output.content
    observation = srv.messages.requests[-1]["messages"][-1]
    assert observation["role"] == "user"


async def test_thinking_from_another_provider_is_not_sent(srv: FakeAnthropicServer) -> None:
    foreign = ThinkingBlock(provider="gemini", text="x", signature="theirs")
    history = [
        user("q"),
        Message(role=MessageRole.ASSISTANT, content="a", thinking=[foreign]),
        user("more"),
    ]
    await make_llm(srv).achat(history)
    assert srv.messages.requests[0]["messages"][1]["content"] == [{"type": "text", "text": "a"}]


async def test_thinking_survives_a_session_store(srv: FakeAnthropicServer, tmp_path: Any) -> None:
    srv.messages.script(
        AnthropicReply(thinking="Need a sum.", tool_calls=[ToolCall("add", {"a": 1, "b": 1})]),
        "Two.",
        "Still two.",
    )
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    async with pm.Session("ann", store=store):
        await OpenaiToolCallingAgent("p", [add]).with_llm(make_llm(srv, thinking=1024))("1+1")
    later = OpenaiToolCallingAgent("p", [add]).with_llm(make_llm(srv, thinking=1024))
    async with pm.Session("ann", store=store):
        await later("and again?")

    resent = srv.messages.requests[2]["messages"][1]["content"]
    assert resent[0]["type"] == "thinking" and resent[0]["thinking"] == "Need a sum."
    assert (
        resent[0]["signature"] == srv.messages.requests[1]["messages"][1]["content"][0]["signature"]
    )


async def test_thinking_survives_a_run_state_as_json(srv: FakeAnthropicServer) -> None:
    deleted: list[str] = []

    def delete(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def build() -> OpenaiToolCallingAgent:
        tools = [Tool(delete, requires_approval=True)]
        return OpenaiToolCallingAgent("p", tools).with_llm(make_llm(srv, thinking=1024))

    srv.messages.script(
        AnthropicReply(
            thinking="Delete it.", tool_calls=[ToolCall("delete", {"path": "a"}, id="t1")]
        ),
        "Deleted.",
    )
    with pm.Session():
        paused = await build().run("clean")
    saved = paused.state.to_json()
    with pm.Session():
        done = await build().run(resume=RunState.from_json(saved), approvals={"t1": True})

    assert done.output.content == "Deleted." and deleted == ["a"]
    assistant = srv.messages.requests[1]["messages"][1]["content"]
    assert [block["type"] for block in assistant] == ["thinking", "tool_use"]
    assert assistant[0]["thinking"] == "Delete it."  # the fake checks the signature too


# --- images, documents, structured output -------------------------------------------------------


async def test_images_and_documents_are_native_blocks(srv: FakeAnthropicServer) -> None:
    pdf = DocumentContent.from_bytes(b"%PDF-1.4 tiny", name="report.pdf")
    picture = ImageContent(url="data:image/jpeg;base64,/9j/AAAA")
    linked = ImageContent(url="https://example.invalid/cat.png")
    await make_llm(srv).achat([user("read", images=[picture, linked], documents=[pdf])])

    blocks = srv.messages.requests[0]["messages"][0]["content"]
    assert blocks[0] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": pdf.data},
        "title": "report.pdf",
    }
    assert blocks[1]["source"] == {"type": "base64", "media_type": "image/jpeg", "data": "/9j/AAAA"}
    assert blocks[2]["source"] == {"type": "url", "url": "https://example.invalid/cat.png"}
    assert blocks[3] == {"type": "text", "text": "read"}


class City(BaseModel):
    name: str
    population: int


async def test_structured_output_uses_the_native_output_format(srv: FakeAnthropicServer) -> None:
    srv.messages.script('{"name": "Oslo", "population": 700000}')
    llm = make_llm(srv)
    city = await StructuralOutput(City).with_llm(llm)("Oslo has 700k people.")

    assert city == City(name="Oslo", population=700000)
    output = srv.messages.requests[0]["output_config"]["format"]
    assert output["type"] == "json_schema" and output["schema"]["properties"]["name"]
    assert output["schema"]["additionalProperties"] is False
    assert llm.capabilities.response_format == "json_schema"


async def test_structured_output_falls_back_to_prompting_when_refused() -> None:
    with FakeAnthropicServer(reject_output_format=True) as srv:
        srv.messages.script('{"name": "Oslo", "population": 700000}')
        llm = make_llm(srv)
        city = await StructuralOutput(City).with_llm(llm)("Oslo has 700k people.")

        assert city.name == "Oslo"
        refused, accepted = srv.messages.requests
        assert "output_config" in refused and "output_config" not in accepted
        assert "population" in json.dumps(accepted["system"])  # the schema is in the prompt
        assert llm.capabilities.response_format == "prompted"


# --- prompt caching and usage -------------------------------------------------------------------


async def test_cache_marks_the_stable_prefix_and_usage_counts_every_input_token(
    srv: FakeAnthropicServer,
) -> None:
    llm = make_llm(srv, cache=True)
    tools = [Tool(add).to_openai()]
    history = [system("A long and stable system prompt."), user("first question here")]
    first = await llm.achat(history, tools=tools)
    history += [first, user("second")]
    second = await llm.achat(history, tools=tools)

    sent = srv.messages.requests[1]
    assert sent["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert sent["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert json.dumps(sent).count("cache_control") == 3
    assert first.usage is not None and second.usage is not None
    assert first.usage.cached_tokens == 0 and first.usage.cache_write_tokens > 0
    assert second.usage.cached_tokens == first.usage.cache_write_tokens  # the prefix was read
    assert llm.usage.prompt_tokens == first.usage.prompt_tokens + second.usage.prompt_tokens


async def test_usage_maps_cache_reads_and_writes_and_prices_each(srv: FakeAnthropicServer) -> None:
    srv.messages.script(
        AnthropicReply(
            content="ok",
            usage={
                "input_tokens": 10,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 200,
                "output_tokens": 5,
            },
        )
    )
    pricing = {"claude-test": (3.0, 15.0, 0.3, 3.75)}
    with pm.track_usage(pricing) as report:
        reply = await pm.Prompt("p").with_llm(make_llm(srv))([user("x")])
    usage = reply.usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.cached_tokens, usage.cache_write_tokens) == (1210, 1000, 200)
    assert usage.total_tokens == 1215
    expected = (10 * 3.0 + 1000 * 0.3 + 200 * 3.75 + 5 * 15.0) / 1e6
    assert report.cost == pytest.approx(expected)
    assert cost_of(check_pricing(pricing), "claude-test", usage) == pytest.approx(expected)


def test_at_most_four_breakpoints_even_with_the_callers_own() -> None:
    from promptimus.llms.anthropic_format import add_cache_breakpoints

    marked = {"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}}
    params: dict[str, Any] = {
        "tools": [{"name": "a"}],
        "system": [dict(marked), dict(marked)],
        "messages": [{"role": "user", "content": [dict(marked), {"type": "text", "text": "u"}]}],
    }
    add_cache_breakpoints(params)
    assert json.dumps(params).count("cache_control") == 4
    assert "cache_control" not in params["messages"][0]["content"][-1]


# --- errors -------------------------------------------------------------------------------------


async def test_429_and_529_are_retried_honouring_retry_after(srv: FakeAnthropicServer) -> None:
    srv.messages.script(Fault.status(429, retry_after=3), Fault.status(529), "finally")
    waits = Waits()
    reply = await make_llm(srv, waits).achat([user("x")])
    assert reply.content == "finally" and len(srv.messages.requests) == 3
    assert waits.seconds[0] == 3.0 and len(waits.seconds) == 2


async def test_overloaded_every_time_exhausts_the_retry_budget(srv: FakeAnthropicServer) -> None:
    srv.messages.script(*[Fault.status(529)] * 4)
    with pytest.raises(RetryBudgetExhausted, match="Overloaded"):
        await make_llm(srv).achat([user("x")])
    assert len(srv.messages.requests) == 4


async def test_invalid_request_is_rejected_once(srv: FakeAnthropicServer) -> None:
    body = anthropic_error("invalid_request_error", "messages.0.content: bad block")
    srv.messages.script(Fault.status(400, body=body))
    with pytest.raises(RequestRejected, match="bad block") as caught:
        await make_llm(srv).achat([user("x")])
    assert caught.value.status == 400 and len(srv.messages.requests) == 1


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_are_named_never_retried_and_never_show_the_key(
    srv: FakeAnthropicServer, status: int
) -> None:
    key = "sk-ant-secret-0123456789"
    body = anthropic_error(status, f"invalid x-api-key {key}")
    srv.messages.script(Fault.status(status, body=body))
    llm = Anthropic("claude-test", api_key=key, base_url=srv.base_url)
    with pytest.raises(RequestRejected, match="API key") as caught:
        await llm.achat([user("x")])
    assert caught.value.status == status and len(srv.messages.requests) == 1
    text = "".join(traceback.format_exception(caught.value))
    assert key not in text and key not in repr(llm)


async def test_requests_after_the_first_fail_in_the_same_terms(srv: FakeAnthropicServer) -> None:
    key = "sk-ant-secret-9876543210"
    waits = Waits()
    llm = Anthropic(
        "claude-test", api_key=key, base_url=srv.base_url, retry=RetryPolicy(sleep=waits)
    )
    await llm.achat([user("warm up")])  # later requests reuse the one the SDK built
    srv.messages.script(Fault.status(429, retry_after=2), Fault.drop(), "ok")
    assert (await llm.achat([user("x")])).content == "ok" and waits.seconds[0] == 2.0
    srv.messages.script(Fault.status(400, body=anthropic_error(400, "bad")))
    with pytest.raises(RequestRejected, match="bad"):
        await llm.achat([user("x")])
    srv.messages.script(Fault.status(401, body=anthropic_error(401, f"invalid key {key}")))
    with pytest.raises(RequestRejected) as caught:
        await llm.achat([user("x")])
    assert caught.value.status == 401 and key not in "".join(
        traceback.format_exception(caught.value)
    )
    assert len(srv.messages.requests) == 6
    assert {request.headers["x-api-key"] for request in srv.requests} == {key}
    assert all("anthropic-version" in request.headers for request in srv.requests)


async def test_context_overflow_is_named() -> None:
    with FakeAnthropicServer(context_window=50) as srv:
        with pytest.raises(ContextWindowExceeded) as caught:
            await make_llm(srv, max_tokens=100).achat([user("x")])
        assert caught.value.context_window == 50 and len(srv.messages.requests) == 1


async def test_a_missing_key_is_named_before_any_request(
    srv: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY"):
        await Anthropic("claude-test", base_url=srv.base_url).achat([user("x")])
    assert srv.requests == []


def test_arguments_are_checked_where_given() -> None:
    with pytest.raises(InvalidArgument, match="max_tokens"):
        Anthropic("m", max_tokens=0)
    with pytest.raises(InvalidArgument, match="below max_tokens"):
        Anthropic("m", max_tokens=1000, thinking=1000)
    with pytest.raises(InvalidArgument, match="thinking"):
        Anthropic("m", thinking=float("nan"))
    with pytest.raises(InvalidArgument, match="cache"):
        Anthropic("m", cache="yes")  # type: ignore[arg-type]


# --- streams that fail --------------------------------------------------------------------------


async def test_a_stream_cut_after_output_is_interrupted(srv: FakeAnthropicServer) -> None:
    srv.messages.script(Fault.cut(), Fault.cut(after_chunks=6, clean=False))
    for _ in range(2):
        with pytest.raises(StreamInterrupted):
            async for _delta in make_llm(srv).astream([user("x")]):
                pass
    assert len(srv.messages.requests) == 2  # output had arrived: not retried


async def test_a_stream_that_fails_before_output_is_retried(srv: FakeAnthropicServer) -> None:
    overloaded = anthropic_error(529)["error"]
    srv.messages.script(
        Fault.status(529), Fault.stream_error(overloaded, after_chunks=2), Fault.drop(), "ok"
    )
    reply = await aaccumulate(make_llm(srv).astream([user("x")]))
    assert reply.content == "ok" and len(srv.messages.requests) == 4


async def test_a_stream_with_only_thinking_is_empty(srv: FakeAnthropicServer) -> None:
    srv.messages.script(AnthropicReply(thinking="hmm"), AnthropicReply(thinking="hmm"))
    with pytest.raises(EmptyReply):
        await aaccumulate(make_llm(srv, max_tokens=2048, thinking=1024).astream([user("x")]))


# --- the seams it shares with OpenAILike --------------------------------------------------------


async def test_response_cache_and_fallback_wrap_it(srv: FakeAnthropicServer) -> None:
    cached = CachedLLM(make_llm(srv, call_kwargs={"temperature": 0}), MemoryCache())
    first = await cached.achat([user("same")])
    again = await cached.achat([user("same")])
    assert first.content == again.content and len(srv.messages.requests) == 1

    srv.messages.script(Fault.status(529), Fault.status(529))
    broken = make_llm(srv, retry=RetryPolicy(max_retries=1, sleep=Waits()))
    chain = FallbackLLM(broken, make_llm(srv))
    reply = await chain.achat([user("fall")])
    assert reply.content == "echo: fall" and len(srv.messages.requests) == 4


async def test_concurrency_cap_holds_on_the_server(srv: FakeAnthropicServer) -> None:
    srv.messages.script(*[Fault.delay(0.05, then="ok")] * 6)
    llm = make_llm(srv, max_concurrency=2)
    await asyncio.gather(*(llm.achat([user(str(i))]) for i in range(6)))
    assert srv.max_in_flight <= 2 and llm.request_count == 6


def test_model_strings_resolve_with_their_key(srv: FakeAnthropicServer) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-x", "ANTHROPIC_BASE_URL": srv.base_url}
    llm = resolve("anthropic:claude-sonnet-4-5", env=env)
    assert isinstance(llm, Anthropic) and llm.model_name == "claude-sonnet-4-5"
    assert llm.base_url == srv.base_url
    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY"):
        resolve("anthropic:claude-sonnet-4-5", env={})
    assert srv.requests == []


async def test_claude_keeps_its_0_1_arguments_on_the_native_api(
    srv: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from promptimus.llms import Claude

    monkeypatch.setenv("ANTHROPIC_API_KEY", srv.api_key)
    srv.messages.script(Fault.status(529), "Hello from Claude")
    # 0.1's positional order: call_kwargs, max_tokens, max_concurrency, n_retries, base_wait
    llm = Claude(
        "claude-sonnet", {"temperature": 0}, 1024, 10, 2, 0.0, base_url=srv.base_url + "/v1"
    )
    assert (llm.retry.max_retries, llm.max_concurrency) == (1, 10)
    reply = await llm.achat([user("Hi")])
    assert reply.content == "Hello from Claude"
    sent = srv.messages.requests[1]
    assert sent["max_tokens"] == 1024 and sent["temperature"] == 0
    assert srv.requests[-1].path == "/v1/messages"


def test_importing_promptimus_imports_no_anthropic() -> None:
    code = (
        "import sys, promptimus, promptimus.llms, promptimus.testing\n"
        "from promptimus.llms import Anthropic\n"
        "from promptimus.testing import AnthropicReply\n"
        "Anthropic('m', api_key='k')\n"
        "assert 'anthropic' not in sys.modules, 'anthropic was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


async def test_a_traced_call_has_an_llm_span_with_anthropics_usage(
    srv: FakeAnthropicServer, exporter: Any
) -> None:
    srv.messages.script(
        AnthropicReply(
            content="Bonjour!",
            usage={"input_tokens": 2, "cache_read_input_tokens": 10, "output_tokens": 3},
        )
    )
    await pm.Prompt("Answer in French.").with_llm(make_llm(srv))([user("hi")])

    (span,) = [s for s in exporter.get_finished_spans() if s.name == "root.llm"]
    attributes = dict(span.attributes or {})
    assert attributes["llm.model_name"] == "claude-test"
    assert attributes["gen_ai.provider.name"] == attributes["llm.system"] == "anthropic"
    assert attributes["llm.token_count.prompt"] == 12
    assert attributes["llm.token_count.prompt_details.cache_read"] == 10
    assert attributes["llm.output_messages.0.message.content"] == "Bonjour!"


async def test_a_streamed_cache_hit_keeps_the_thinking_blocks(srv: FakeAnthropicServer) -> None:
    srv.messages.script(
        AnthropicReply(thinking="Sum.", tool_calls=[ToolCall("add", {"a": 1, "b": 2})])
    )
    llm = CachedLLM(make_llm(srv, thinking=1024, call_kwargs={"temperature": 0}), MemoryCache())
    first = await aaccumulate(llm.astream([user("1+2")]))
    replayed = await aaccumulate(llm.astream([user("1+2")]))

    assert len(srv.messages.requests) == 1  # the second came from the cache
    assert replayed.thinking == first.thinking and first.thinking
    assert replayed.thinking[0].signature == first.thinking[0].signature


def test_a_tool_use_sent_whole_at_its_start_keeps_its_input() -> None:
    from promptimus.llms.accumulator import accumulate
    from promptimus.llms.anthropic_format import StreamReader

    reader = StreamReader()
    events = [
        {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 1}},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 2},
        },
    ]
    deltas = [delta for event in events if (delta := reader.read(event)) is not None]
    message = accumulate(deltas)
    assert message.tool_calls is not None
    assert json.loads(message.tool_calls[0].function.arguments) == {"a": 1}
    assert message.usage is not None and message.usage.total_tokens == 5


async def test_a_durable_run_sends_signed_thinking_back(
    srv: FakeAnthropicServer, tmp_path: Any
) -> None:
    """Each model request is a durable step: the reply (thinking blocks with their signatures)
    is stored by DBOS and read back into the next request, which the server checks."""
    from dbos import DBOS
    from durable_support import configure

    from promptimus.durable import DurableAgent

    srv.messages.script(
        AnthropicReply(thinking="First 1+2.", tool_calls=[ToolCall("add", {"a": 1, "b": 2})]),
        AnthropicReply(thinking="Then 3+4.", tool_calls=[ToolCall("add", {"a": 3, "b": 4})]),
        "3 and 7.",
    )
    configure(tmp_path / "runs.sqlite")
    try:
        agent = OpenaiToolCallingAgent("You add.", [add]).with_llm(make_llm(srv, thinking=2048))
        durable = DurableAgent(agent, name="claude-adds")
        DBOS.launch()
        result = await durable.run("1+2 and 3+4?", workflow_id="c-1")
    finally:
        DBOS.destroy(destroy_registry=True)

    assert result.status == "completed" and result.output.content == "3 and 7."
    last = srv.messages.requests[-1]["messages"]
    thinking = [b for m in last if m["role"] == "assistant" for b in m["content"]]
    signed = [b for b in thinking if b["type"] == "thinking"]
    assert [b["thinking"] for b in signed] == ["First 1+2.", "Then 3+4."]
    assert all(b["signature"].startswith("sig_") for b in signed)


def test_what_a_reply_keeps_survives_a_checkpoint_of_its_memory(tmp_path: Any) -> None:
    """A conversation saved in a checkpoint (a Parameter holds it as its JSON text) keeps
    thinking blocks, signatures and a tool call's extra_content verbatim."""
    from promptimus.dto import History, ToolFunction, ToolRequest

    reply = Message(
        role=MessageRole.ASSISTANT,
        thinking=[ThinkingBlock(provider="anthropic", text="hm", signature="sig_1")],
        tool_calls=[
            ToolRequest(
                id="c1",
                function=ToolFunction(name="add", arguments="{}"),
                extra_content={"google": {"thought_signature": "c2ln"}},
            )
        ],
    )

    class Holder(pm.Module):
        def __init__(self) -> None:
            super().__init__()
            self.kept = pm.Parameter(History.dump_json([reply]).decode())

        async def forward(self) -> None:
            return None

    holder = Holder()
    holder.save(tmp_path / "memory.toml")
    fresh = Holder()
    fresh.kept.value = "[]"
    fresh.load(tmp_path / "memory.toml")
    assert History.validate_json(fresh.kept.value) == [reply]


async def test_a_span_prices_cache_reads_and_writes_at_their_own_rates(
    srv: FakeAnthropicServer,
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from promptimus.tracing import instrument

    srv.messages.script(
        AnthropicReply(
            content="ok",
            usage={
                "input_tokens": 1_000_000,
                "cache_read_input_tokens": 2_000_000,
                "cache_creation_input_tokens": 1_000_000,
                "output_tokens": 1_000_000,
            },
        )
    )
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with instrument(provider, pricing={"claude-test": (3.0, 15.0, 0.3, 3.75)}):
        await pm.Prompt("Hi.").with_llm(make_llm(srv))([user("hi")])
    provider.shutdown()
    (span,) = [s for s in memory.get_finished_spans() if s.name == "root.llm"]
    attributes = dict(span.attributes or {})
    assert attributes["llm.cost.prompt"] == pytest.approx(3.0 + 2 * 0.3 + 3.75)
    assert attributes["llm.cost.total"] == pytest.approx(3.0 + 0.6 + 3.75 + 15.0)
