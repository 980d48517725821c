"""OpenAIResponses through the real openai SDK against the fake Responses API (no SDK mocks):
every test checks what the server received."""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from pydantic import BaseModel

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import FinalResult, ReasoningDelta
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.agents.run_state import RunState
from promptimus.dto import DocumentContent, ImageContent, Message, MessageRole, ThinkingBlock
from promptimus.errors import (
    ContentFiltered,
    ContextWindowExceeded,
    OutputTruncated,
    ProviderUnavailable,
    RequestRejected,
    StreamInterrupted,
    UnknownRequestOption,
)
from promptimus.llms import (
    CachedLLM,
    FallbackLLM,
    MemoryCache,
    OpenAIResponses,
    aaccumulate,
    resolve,
)
from promptimus.modules.structural import StructuralOutput
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import FakeOpenAIServer, Fault, ResponsesReply, ToolCall
from promptimus.tools import Tool
from promptimus.transport import RetryPolicy


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


class Waits:
    """Records the waits the retry layer asks for, without spending them."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)


def make_llm(srv: FakeOpenAIServer, waits: Waits | None = None, **kwargs: Any) -> OpenAIResponses:
    kwargs.setdefault("retry", RetryPolicy(max_retries=3, sleep=waits or Waits()))
    kwargs.setdefault("timeout", 10.0)
    return OpenAIResponses("o-test", api_key=srv.api_key, base_url=srv.base_url, **kwargs)


def user(text: str, **kwargs: Any) -> Message:
    return Message(role=MessageRole.USER, content=text, **kwargs)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def raw_client(srv: FakeOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(api_key=srv.api_key, base_url=srv.base_url, max_retries=0)


# --- one call -----------------------------------------------------------------------------------


async def test_a_reply_its_usage_and_the_request_the_api_received(srv: FakeOpenAIServer) -> None:
    usage = {"input_tokens": 120, "cached_tokens": 100, "output_tokens": 30, "reasoning_tokens": 20}
    srv.responses.script(ResponsesReply(content="Hello!", usage=usage))
    system = Message(role=MessageRole.SYSTEM, content="Be brief.")
    reply = await make_llm(srv).achat([system, user("hi")], temperature=0, max_tokens=50)

    assert reply.content == "Hello!" and reply.finish_reason == "stop"
    assert reply.model_name == "o-test" and reply.response_id
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.cached_tokens) == (120, 100)
    assert (reply.usage.completion_tokens, reply.usage.reasoning_tokens) == (30, 20)
    assert reply.usage.total_tokens == 150
    sent = srv.responses.requests[0]
    assert srv.requests[0].path == "/v1/responses"
    assert sent["input"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
    ]
    assert sent["store"] is False and sent["include"] == ["reasoning.encrypted_content"]
    assert sent["max_output_tokens"] == 50 and sent["temperature"] == 0
    with pytest.raises(UnknownRequestOption, match="seed"):
        await make_llm(srv).achat([user("x")], seed=1)
    assert len(srv.responses.requests) == 1  # refused before sending


async def test_reasoning_settings_and_prompt_cache_key_are_sent(srv: FakeOpenAIServer) -> None:
    srv.responses.script(ResponsesReply(reasoning="Think.", content="ok"))
    llm = make_llm(
        srv,
        reasoning_effort="high",
        reasoning_summary="auto",
        prompt_cache_key="tenant-7",
        prompt_cache_retention="24h",
    )
    reply = await llm.achat([user("x")])
    sent = srv.responses.requests[0]
    assert sent["reasoning"] == {"effort": "high", "summary": "auto"}
    assert sent["prompt_cache_key"] == "tenant-7" and sent["prompt_cache_retention"] == "24h"
    assert reply.reasoning == "Think."
    assert reply.thinking is not None
    block = reply.thinking[0]
    assert block.provider == "openai-responses" and block.id and block.id.startswith("rs_")
    assert block.text == "Think." and block.redacted  # the encrypted content


def test_arguments_are_checked_where_given() -> None:
    from promptimus.errors import InvalidArgument

    for bad in (
        {"reasoning_effort": "huge"},
        {"reasoning_summary": 1},
        {"store": "yes"},
        {"conversation": "previous_response_id"},  # needs store=True
        {"prompt_cache_key": ""},
        {"prompt_cache_retention": "forever"},
        {"timeout": float("nan")},
    ):
        with pytest.raises(InvalidArgument):
            OpenAIResponses("m", api_key="k", **bad)


# --- tools and reasoning round trips ------------------------------------------------------------


async def test_a_tool_loop_sends_the_reasoning_back_before_the_calls_it_led_to(
    srv: FakeOpenAIServer,
) -> None:
    srv.responses.script(
        ResponsesReply(
            reasoning="I should add twice.",
            tool_calls=[ToolCall("add", {"a": 1, "b": 2}), ToolCall("add", {"a": 3, "b": 4})],
        ),
        "3 and 7.",
    )
    agent = OpenaiToolCallingAgent("You add.", [add]).with_llm(
        make_llm(srv, reasoning_effort="low", reasoning_summary="auto")
    )
    reply = await agent("add things")

    assert reply.content == "3 and 7."
    first, second = srv.responses.requests
    assert first["tools"] == [
        {
            "type": "function",
            "name": "add",
            "description": "Add two integers.",
            "parameters": first["tools"][0]["parameters"],
            "strict": first["tools"][0]["strict"],
        }
    ]
    items = second["input"]
    kinds = [item.get("type", item.get("role")) for item in items]
    assert kinds == [
        "system",
        "user",
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    reasoning = items[2]
    assert srv.responses.stored == {}  # nothing stored under store=False
    assert reasoning["encrypted_content"].startswith("gAAAA")
    assert reasoning["summary"] == [{"type": "summary_text", "text": "I should add twice."}]
    calls = [item["call_id"] for item in items[3:5]]
    assert [(item["call_id"], item["output"]) for item in items[5:]] == [
        (calls[0], "3"),
        (calls[1], "7"),
    ]
    assert all("id" not in item for item in items[3:])  # no id the server did not keep


async def test_the_fake_rejects_what_the_real_api_rejects(srv: FakeOpenAIServer) -> None:
    client = raw_client(srv)
    first = client.responses.create(
        model="o-test", input="hi", store=False, include=["reasoning.encrypted_content"]
    )
    assert first.output[0].type == "message"
    srv.responses.script(ResponsesReply(reasoning="r", tool_calls=[ToolCall("add", {})]))
    reply = client.responses.create(
        model="o-test", input="x", store=False, include=["reasoning.encrypted_content"]
    )
    reasoning = reply.output[0].model_dump(exclude_none=True)
    call = reply.output[1].model_dump(exclude_none=True)
    call.pop("id")
    call.pop("status")
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "1"}
    cases: list[tuple[list[Any], int, str]] = [
        ([output], 400, "No tool call found"),
        ([reasoning, output], 400, "without its required following item"),
        ([{**reasoning, "encrypted_content": None}, call, output], 404, "not found"),
        ([{**reasoning, "encrypted_content": "gAAAAforged"}, call, output], 400, "verified"),
    ]
    for items, status, said in cases:
        with pytest.raises(openai.APIStatusError, match=said) as caught:
            client.responses.create(model="o-test", input=items, store=False)
        assert caught.value.status_code == status
    with pytest.raises(openai.NotFoundError, match="Previous response"):
        client.responses.create(model="o-test", input="x", previous_response_id="resp_never")
    accepted = client.responses.create(model="o-test", input=[reasoning, call, output])
    assert accepted.status == "completed"


async def test_a_tool_loop_streams_with_both_agent_types(srv: FakeOpenAIServer) -> None:
    for agent_type in (OpenaiToolCallingAgent, ToolCallingAgent):
        srv.responses.clear()
        if agent_type is OpenaiToolCallingAgent:
            first: Any = ResponsesReply(
                reasoning="Use add.", tool_calls=[ToolCall("add", {"a": 2, "b": 2})]
            )
        else:
            action = 'Action: add\nAction Input: {"a": 2, "b": 2}'
            first = ResponsesReply(reasoning="Use add.", content=action)
        srv.responses.script(first, ResponsesReply(content="Answer: Four."))
        llm = make_llm(srv, reasoning_summary="auto")
        agent = agent_type("p", [add]).with_llm(llm)
        events = [event async for event in agent.stream("2+2")]
        final = events[-1]
        assert isinstance(final, FinalResult), (agent_type, events[-3:])
        assert "Four." in str(final.output)
        assert any(isinstance(event, ReasoningDelta) for event in events)
        second = srv.responses.requests[1]["input"]
        assert next(item["type"] for item in second if "type" in item) == "reasoning"


async def test_stream_adds_up_to_the_plain_reply(srv: FakeOpenAIServer) -> None:
    reply = ResponsesReply(
        reasoning=["Two plus two.", "Is four."],
        content="It is four.",
        tool_calls=[ToolCall("add", {"a": 2, "b": 2})],
        usage={"cached_tokens": 3},
    )
    srv.responses.script(reply, reply)
    llm = make_llm(srv, reasoning_summary="detailed")
    deltas = [delta async for delta in llm.astream([user("2+2?")])]
    streamed = await aaccumulate(_replay(deltas))
    plain = await llm.achat([user("2+2?")])

    assert streamed.content == plain.content == "It is four."
    assert streamed.reasoning == plain.reasoning == "Two plus two.\n\nIs four."
    assert streamed.tool_calls is not None and plain.tool_calls is not None
    assert [c.function for c in streamed.tool_calls] == [c.function for c in plain.tool_calls]
    assert streamed.finish_reason == plain.finish_reason == "tool_calls"
    assert streamed.usage is not None and streamed.usage.cached_tokens == 3
    assert streamed.response_id and streamed.response_id != plain.response_id
    assert streamed.thinking is not None and len(streamed.thinking) == 2
    assert all(block.redacted for block in streamed.thinking)
    assert srv.responses.requests[0]["stream"] is True


async def _replay(items: list[Any]) -> Any:
    for item in items:
        yield item


async def test_thinking_from_another_provider_is_not_sent(srv: FakeOpenAIServer) -> None:
    foreign = ThinkingBlock(provider="anthropic", text="x", signature="theirs")
    history = [
        user("q"),
        Message(role=MessageRole.ASSISTANT, content="a", thinking=[foreign]),
        user("more"),
    ]
    await make_llm(srv).achat(history)
    assert srv.responses.requests[0]["input"][1] == {"role": "assistant", "content": "a"}


async def test_strict_tool_schemas(srv: FakeOpenAIServer) -> None:
    def greet(name: str, title: str = "") -> str:
        """Greet someone."""
        return f"hi {title} {name}"

    closed = {
        "type": "function",
        "function": {
            "name": "pick",
            "parameters": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "required": ["x"],
                "additionalProperties": False,
            },
        },
    }
    await make_llm(srv).achat([user("x")], tools=[Tool(greet).to_openai(), closed])
    tools = srv.responses.requests[0]["tools"]
    assert [tool["strict"] for tool in tools] == [False, True]
    # the API takes a function as strict by default: the same tool without "strict" is refused
    with pytest.raises(openai.BadRequestError, match="Invalid schema for function 'greet'"):
        raw_client(srv).responses.create(
            model="o-test",
            input="x",
            tools=[{k: v for k, v in tools[0].items() if k != "strict"}],  # type: ignore[list-item]
        )


async def test_images_and_pdfs_are_input_items(srv: FakeOpenAIServer) -> None:
    pdf = DocumentContent.from_bytes(b"%PDF-1.4 tiny", name="report.pdf")
    picture = ImageContent(url="data:image/jpeg;base64,/9j/AAAA", detail="low")
    await make_llm(srv).achat([user("read", images=[picture], documents=[pdf])])
    parts = srv.responses.requests[0]["input"][0]["content"]
    assert parts == [
        {"type": "input_text", "text": "read"},
        {"type": "input_image", "image_url": picture.url, "detail": "low"},
        {
            "type": "input_file",
            "filename": "report.pdf",
            "file_data": f"data:application/pdf;base64,{pdf.data}",
        },
    ]


# --- stored conversations -----------------------------------------------------------------------


async def test_previous_response_id_carries_a_stored_conversation(srv: FakeOpenAIServer) -> None:
    srv.responses.script(
        ResponsesReply(reasoning="Add.", tool_calls=[ToolCall("add", {"a": 1, "b": 1})]),
        "Two.",
        ResponsesReply(reasoning="Again.", tool_calls=[ToolCall("add", {"a": 2, "b": 2})]),
        "Four.",
    )
    llm = make_llm(srv, store=True, conversation="previous_response_id")
    agent = OpenaiToolCallingAgent("p", [add]).with_llm(llm)
    assert (await agent("1+1")).content == "Two."
    _, second = srv.responses.requests
    assert second["previous_response_id"] and second["store"] is True
    assert [item["type"] for item in second["input"]] == ["function_call_output"]

    srv.responses.forget()  # the stored responses expired
    assert (await agent("2+2")).content == "Four."
    gone, whole, last = srv.responses.requests[2:]
    assert gone["previous_response_id"] and gone["input"] == [{"role": "user", "content": "2+2"}]
    assert "previous_response_id" not in whole  # sent once more, whole
    assert [item.get("type", item.get("role")) for item in whole["input"]][:5] == [
        "system",
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert last["previous_response_id"] and len(last["input"]) == 1


# --- ends and errors ----------------------------------------------------------------------------


async def test_incomplete_and_failed_responses_are_named(srv: FakeOpenAIServer) -> None:
    srv.responses.script(
        ResponsesReply(content="Half a", incomplete="max_output_tokens"),
        ResponsesReply(content="", incomplete="content_filter"),
        ResponsesReply(failed={"code": "invalid_prompt", "message": "the prompt is invalid"}),
    )
    llm = make_llm(srv)
    with pytest.raises(OutputTruncated, match="max_output_tokens"):
        await llm.achat([user("x")])
    with pytest.raises(ContentFiltered, match="content filter"):
        await llm.achat([user("x")])
    with pytest.raises(RequestRejected, match="the prompt is invalid"):
        await llm.achat([user("x")])
    assert len(srv.responses.requests) == 3  # none retried


async def test_a_failed_stream_and_an_error_event_quote_the_server(srv: FakeOpenAIServer) -> None:
    srv.responses.script(
        ResponsesReply(content="partial", failed={"code": "server_error", "message": "boom"}),
    )
    llm = make_llm(srv, max_retries=0)
    with pytest.raises(ProviderUnavailable, match="boom"):
        async for _ in llm.astream([user("x")]):
            pass
    srv.responses.script(
        Fault.stream_error({"code": "rate_limit_exceeded", "message": "slow down"}, 0), "ok"
    )
    reply = await aaccumulate(make_llm(srv).astream([user("x")]))
    assert reply.content == "ok"  # failed before any output: retried
    srv.responses.script(
        Fault.stream_error({"code": "invalid_prompt", "message": "no such thing"}, 6)
    )
    with pytest.raises(RequestRejected, match="no such thing"):
        async for _ in make_llm(srv).astream([user("x")]):
            pass


async def test_retries_429_honouring_retry_after_and_never_400(srv: FakeOpenAIServer) -> None:
    srv.responses.script(Fault.status(429, retry_after=3), Fault.status(500), "finally")
    waits = Waits()
    reply = await make_llm(srv, waits).achat([user("x")])
    assert reply.content == "finally" and len(srv.responses.requests) == 3
    assert waits.seconds[0] == 3.0 and len(waits.seconds) == 2
    srv.responses.script(Fault.status(400))
    with pytest.raises(RequestRejected) as caught:
        await make_llm(srv).achat([user("x")])
    assert caught.value.status == 400 and len(srv.responses.requests) == 4


async def test_context_overflow_is_named() -> None:
    with FakeOpenAIServer(context_window=5) as srv:
        with pytest.raises(ContextWindowExceeded):
            await make_llm(srv).achat([user("one two three four five six seven")])
        assert len(srv.responses.requests) == 1


async def test_a_stream_that_ends_before_completed_is_interrupted(srv: FakeOpenAIServer) -> None:
    srv.responses.script(Fault.cut())
    with pytest.raises(StreamInterrupted):
        async for _ in make_llm(srv).astream([user("hello there")]):
            pass


async def test_the_key_is_never_shown(srv: FakeOpenAIServer) -> None:
    key = "sk-secret-responses-0123456789"
    srv.responses.script(Fault.echo_key(401))
    llm = OpenAIResponses("o-test", api_key=key, base_url=srv.base_url)
    with pytest.raises(RequestRejected) as caught:
        await llm.achat([user("x")])
    text = "".join(traceback.format_exception(caught.value))
    assert key not in text and key not in repr(llm) and key not in str(vars(llm))


def test_the_model_string_resolves(srv: FakeOpenAIServer) -> None:
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.base_url}
    llm = resolve("openai-responses:o-test", env=env)
    assert isinstance(llm, OpenAIResponses) and llm.base_url == srv.base_url
    assert type(resolve("openai:o-test", env=env)).__name__ == "OpenAILike"


# --- structured output, usage and cost, and what wraps the provider -----------------------------


class City(BaseModel):
    name: str
    population: int


async def test_structured_output_goes_through_text_format(srv: FakeOpenAIServer) -> None:
    srv.responses.script('{"name": "Oslo", "population": 700000}')
    llm = make_llm(srv)
    city = await StructuralOutput(City).with_llm(llm)("Oslo has 700k people.")

    assert city == City(name="Oslo", population=700000)
    form = srv.responses.requests[0]["text"]["format"]
    assert form["type"] == "json_schema" and form["schema"]["properties"]["name"]
    assert "response_format" not in srv.responses.requests[0]


async def test_streamed_structured_output_arrives_in_pieces(srv: FakeOpenAIServer) -> None:
    srv.responses.script('{"name": "Oslo", "population": 700000}')
    agent = OpenaiToolCallingAgent("p", structural_output=City).with_llm(make_llm(srv))
    events = [event async for event in agent.stream("Oslo?")]
    final = events[-1]
    assert isinstance(final, FinalResult) and final.output == City(name="Oslo", population=700000)
    assert srv.responses.requests[0]["text"]["format"]["type"] == "json_schema"


async def test_cached_input_is_priced_at_its_own_rate(srv: FakeOpenAIServer) -> None:
    usage = {"input_tokens": 1000, "cached_tokens": 800, "output_tokens": 100}
    srv.responses.script(ResponsesReply(content="ok", usage=usage))
    pricing = {"o-test": (2.0, 8.0, 0.5)}
    with pm.track_usage(pricing) as report:
        reply = await pm.Prompt("p").with_llm(make_llm(srv))([user("x")])
    assert reply.usage is not None and reply.usage.cached_tokens == 800
    assert report.cost == pytest.approx((200 * 2.0 + 800 * 0.5 + 100 * 8.0) / 1e6)


async def test_response_cache_and_fallback_wrap_it(srv: FakeOpenAIServer) -> None:
    srv.responses.script(ResponsesReply(reasoning="Sum.", content="3"))
    cached = CachedLLM(make_llm(srv, call_kwargs={"temperature": 0}), MemoryCache())
    first = await aaccumulate(cached.astream([user("1+2")]))
    again = await aaccumulate(cached.astream([user("1+2")]))
    assert len(srv.responses.requests) == 1  # the second came from the cache
    assert again.thinking == first.thinking and first.thinking and first.thinking[0].redacted
    assert again.response_id == first.response_id

    srv.responses.script(Fault.status(500), Fault.status(500))
    broken = make_llm(srv, retry=RetryPolicy(max_retries=1, sleep=Waits()))
    reply = await FallbackLLM(broken, make_llm(srv)).achat([user("fall")])
    assert reply.content == "echo: fall" and len(srv.responses.requests) == 4


async def test_reasoning_survives_a_session_store(srv: FakeOpenAIServer, tmp_path: Any) -> None:
    srv.responses.script(
        ResponsesReply(reasoning="Need a sum.", tool_calls=[ToolCall("add", {"a": 1, "b": 1})]),
        "Two.",
        "Still two.",
    )
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    llm = make_llm(srv, reasoning_summary="auto")
    async with pm.Session("ann", store=store):
        await OpenaiToolCallingAgent("p", [add]).with_llm(llm)("1+1")
    async with pm.Session("ann", store=store):
        await OpenaiToolCallingAgent("p", [add]).with_llm(llm)("and again?")

    issued = srv.responses.requests[1]["input"][2]
    resent = srv.responses.requests[2]["input"]
    assert issued["type"] == "reasoning" and issued in resent  # the fake verified it again


async def test_reasoning_survives_a_run_state_as_json(srv: FakeOpenAIServer) -> None:
    deleted: list[str] = []

    def delete(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def build() -> OpenaiToolCallingAgent:
        tools = [Tool(delete, requires_approval=True)]
        return OpenaiToolCallingAgent("p", tools).with_llm(make_llm(srv))

    srv.responses.script(
        ResponsesReply(
            reasoning="Delete it.", tool_calls=[ToolCall("delete", {"path": "a"}, id="t1")]
        ),
        "Deleted.",
    )
    with pm.Session():
        paused = await build().run("clean")
    saved = paused.state.to_json()
    with pm.Session():
        done = await build().run(resume=RunState.from_json(saved), approvals={"t1": True})

    assert done.output.content == "Deleted." and deleted == ["a"]
    kinds = [item.get("type", item.get("role")) for item in srv.responses.requests[1]["input"]]
    assert kinds[2:] == ["reasoning", "function_call", "function_call_output"]


async def test_a_traced_call_names_the_provider(srv: FakeOpenAIServer, exporter: Any) -> None:
    await pm.Prompt("Hi.").with_llm(make_llm(srv))([user("hi")])
    (span,) = [s for s in exporter.get_finished_spans() if s.name == "root.llm"]
    assert dict(span.attributes or {})["gen_ai.provider.name"] == "openai"


# --- hosted tools -------------------------------------------------------------------------------


async def test_hosted_tools_pass_through_and_their_calls_come_back(srv: FakeOpenAIServer) -> None:
    from promptimus.tools import HostedTool

    search = {"type": "web_search_call", "action": {"type": "search", "query": "oslo"}}
    reply = ResponsesReply(hosted_calls=[search], content="Oslo has 700k people.")
    srv.responses.script(reply, reply, "ok")
    llm = make_llm(srv)
    tools = [HostedTool("web_search", search_context_size="low").to_openai()]
    plain = await llm.achat([user("Oslo?")], tools=tools)
    streamed = await aaccumulate(llm.astream([user("Oslo?")], tools=tools))

    assert srv.responses.requests[0]["tools"] == [
        {"type": "web_search", "search_context_size": "low"}
    ]
    for message in (plain, streamed):
        assert message.hosted_calls is not None
        (call,) = message.hosted_calls
        assert (call.provider, call.type, call.name) == (
            "openai-responses",
            "web_search_call",
            "web_search",
        )
        assert call.item["action"]["query"] == "oslo" and call.id and call.status == "completed"
    await llm.achat([user("Oslo?"), plain, user("more")], tools=tools)
    sent = srv.responses.requests[2]["input"]
    assert plain.hosted_calls is not None
    assert sent[1] == plain.hosted_calls[0].item  # sent back whole, before the text
    assert sent[2] == {"role": "assistant", "content": "Oslo has 700k people."}


def test_a_hosted_tool_is_checked_where_given() -> None:
    from promptimus.errors import InvalidArgument
    from promptimus.tools import HostedTool

    for bad in ("", "function", "Web Search", 3):
        with pytest.raises(InvalidArgument):
            HostedTool(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument):
        HostedTool("web_search", type="x")
    assert repr(HostedTool("file_search", vector_store_ids=["vs_1"])) == (
        "HostedTool('file_search', vector_store_ids=['vs_1'])"
    )
