"""An agent's structured answer with tools: the answer tool (output mode "tool", the default
with tools), native `response_format` (the default without), prompted; through the real SDKs
and the fake servers of each provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fake_llm import make_llm
from pydantic import BaseModel

from promptimus.agents.events import (
    FinalResult,
    NeedsApproval,
    PartialOutput,
    ToolCallEvent,
    ToolResultEvent,
)
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.run_state import RunState
from promptimus.errors import InvalidArgument, OutputTruncated
from promptimus.llms import Anthropic, Gemini
from promptimus.modules.structural import StructuralOutput
from promptimus.testing import (
    AnthropicReply,
    FakeAnthropicServer,
    FakeGeminiServer,
    FakeOpenAIServer,
    GeminiCall,
    GeminiReply,
    Reply,
    ToolCall,
)
from promptimus.tools.tool import Tool
from promptimus.transport import RetryPolicy


class Weather(BaseModel):
    city: str
    celsius: float
    summary: str


PARIS = {"city": "Paris", "celsius": 21, "summary": "sunny and warm"}


def lookup(city: str) -> str:
    """The weather report for a city."""
    return f"{city}: 21 C, sunny"


def names(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


def agent_on(llm: Any, tools: list[Any] | None = None, **kwargs: Any) -> OpenaiToolCallingAgent:
    tools = [lookup] if tools is None else tools
    return OpenaiToolCallingAgent(
        "You report the weather.", tools, structural_output=Weather, **kwargs
    ).with_llm(llm)


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


# --- OpenAI-compatible -------------------------------------------------------------------------


async def test_with_tools_the_answer_is_a_tool_and_no_response_format(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(
        Reply(tool_calls=[ToolCall("lookup", {"city": "Paris"}, id="c1")]),
        Reply(tool_calls=[ToolCall("final_result", PARIS, id="c2")]),
    )
    agent = agent_on(make_llm(srv))

    output, record = await agent.run("Weather in Paris?")

    assert output == Weather(**PARIS)
    for request in srv.chat.requests:
        assert "response_format" not in request
        assert names(request) == ["lookup", "final_result"]
        assert request.get("tool_choice", "auto") == "auto"
    answer_tool = srv.chat.requests[0]["tools"][1]["function"]
    assert answer_tool["parameters"]["required"] == ["city", "celsius", "summary"]
    assert answer_tool["strict"] is True
    # the answer tool is no tool call of the run: only lookup ran
    assert [call.name for step in record.steps for call in step.tool_calls] == ["lookup"]
    # the memory keeps the answer as the assistant's JSON text, with no call left unanswered
    last = agent.memory.data[-1]
    assert last.role == "assistant" and not last.tool_calls
    assert json.loads(last.content) == PARIS


async def test_a_second_turn_after_a_tool_answer_is_a_valid_conversation(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(
        Reply(tool_calls=[ToolCall("final_result", PARIS, id="c1")]),
        Reply(tool_calls=[ToolCall("final_result", {**PARIS, "celsius": 22}, id="c2")]),
    )
    agent = agent_on(make_llm(srv))
    await agent("Paris?")
    assert (await agent("And tomorrow?")).celsius == 22

    sent = srv.chat.requests[1]["messages"]
    called = {call["id"] for m in sent for call in m.get("tool_calls") or ()}
    answered = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    assert called == answered  # every call the model made has its result


async def test_the_answer_with_another_call_pending_is_not_taken(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("lookup", {"city": "Paris"}, id="c1"),
                ToolCall("final_result", {**PARIS, "summary": "a guess"}, id="c2"),
            ]
        ),
        Reply(tool_calls=[ToolCall("final_result", PARIS, id="c3")]),
    )
    agent = agent_on(make_llm(srv))

    output, record = await agent.run("Weather in Paris?")

    assert output.summary == "sunny and warm"  # not the guess made before lookup's result
    second = srv.chat.requests[1]["messages"]
    results = {m["tool_call_id"]: m["content"] for m in second if m["role"] == "tool"}
    assert results["c1"] == "Paris: 21 C, sunny"
    assert "not taken" in results["c2"].lower() and "final_result" in results["c2"]
    assert [c.name for s in record.steps for c in s.tool_calls] == ["lookup"]


async def test_valid_json_text_instead_of_the_tool_is_taken(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Reply(content="```json\n" + json.dumps(PARIS) + "\n```"))
    agent = agent_on(make_llm(srv))

    assert await agent("Paris?") == Weather(**PARIS)
    assert len(srv.chat.requests) == 1


async def test_invalid_text_goes_back_to_the_model(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        Reply(content="It is sunny in Paris."),
        Reply(tool_calls=[ToolCall("final_result", PARIS, id="c1")]),
    )
    agent = agent_on(make_llm(srv))

    assert await agent("Paris?") == Weather(**PARIS)
    feedback = srv.chat.requests[1]["messages"][-1]
    assert feedback["role"] == "user" and "final_result" in feedback["content"]


async def test_invalid_answer_arguments_go_back_as_the_tool_result(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(
        Reply(tool_calls=[ToolCall("final_result", {"city": "Paris"}, id="c1")]),
        Reply(tool_calls=[ToolCall("final_result", PARIS, id="c2")]),
    )
    agent = agent_on(make_llm(srv), max_steps=1)  # a retry of the answer uses no step

    assert await agent("Paris?") == Weather(**PARIS)
    feedback = srv.chat.requests[1]["messages"][-1]
    assert feedback["role"] == "tool" and feedback["tool_call_id"] == "c1"
    assert "celsius" in feedback["content"] and "summary" in feedback["content"]


async def test_a_cut_off_answer_is_an_error(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        Reply(
            tool_calls=[ToolCall("final_result", '{"city": "Par', id="c1")],
            finish_reason="length",
        )
    )
    with pytest.raises(OutputTruncated):
        await agent_on(make_llm(srv))("Paris?")


async def test_the_answer_tool_does_not_take_a_users_tool_name(srv: FakeOpenAIServer) -> None:
    ran: list[str] = []

    def final_result(note: str) -> str:
        """Store a note."""
        ran.append(note)
        return "stored"

    srv.chat.script(
        Reply(tool_calls=[ToolCall("final_result", {"note": "hi"}, id="c1")]),
        Reply(tool_calls=[ToolCall("final_result_2", PARIS, id="c2")]),
    )
    agent = agent_on(make_llm(srv), tools=[final_result])

    assert await agent("Paris?") == Weather(**PARIS)
    assert ran == ["hi"]
    assert names(srv.chat.requests[0]) == ["final_result", "final_result_2"]


async def test_a_stream_shows_the_answer_tool_arguments_as_partial_output(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(
        Reply(tool_calls=[ToolCall("lookup", {"city": "Paris"}, id="c1")]),
        Reply(tool_calls=[ToolCall("final_result", json.dumps(PARIS, indent=1), id="c2")]),
    )
    agent = agent_on(make_llm(srv))

    events = [event async for event in agent.stream("Weather in Paris?")]

    partials = [e.output for e in events if isinstance(e, PartialOutput)]
    assert len(partials) >= 2 and partials[0].summary is None
    assert partials[-1].model_dump() == PARIS
    assert [e.name for e in events if isinstance(e, ToolCallEvent | ToolResultEvent)] == [
        "lookup",
        "lookup",
    ]
    assert isinstance(events[-1], FinalResult) and events[-1].output == Weather(**PARIS)


async def test_without_tools_the_default_stays_native(srv: FakeOpenAIServer) -> None:
    srv.chat.script(json.dumps(PARIS))
    agent = agent_on(make_llm(srv), tools=[])

    assert await agent("Paris?") == Weather(**PARIS)
    request = srv.chat.requests[0]
    assert request["response_format"]["type"] == "json_schema" and "tools" not in request


async def test_output_mode_native_sends_response_format_beside_the_tools(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(json.dumps(PARIS))
    agent = agent_on(make_llm(srv), output_mode="native")

    assert await agent("Paris?") == Weather(**PARIS)
    request = srv.chat.requests[0]
    assert request["response_format"]["type"] == "json_schema"
    assert names(request) == ["lookup"]


async def test_output_mode_prompted_puts_the_schema_in_a_system_message(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(json.dumps(PARIS))
    agent = agent_on(make_llm(srv), output_mode="prompted")

    assert await agent("Paris?") == Weather(**PARIS)
    request = srv.chat.requests[0]
    assert "response_format" not in request and names(request) == ["lookup"]
    systems = [m["content"] for m in request["messages"] if m["role"] == "system"]
    assert any('"summary"' in text for text in systems)


async def test_output_mode_tool_without_user_tools(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Reply(tool_calls=[ToolCall("final_result", PARIS, id="c1")]))
    agent = agent_on(make_llm(srv), tools=[], output_mode="tool")

    assert await agent("Paris?") == Weather(**PARIS)
    assert names(srv.chat.requests[0]) == ["final_result"]
    assert "response_format" not in srv.chat.requests[0]


@pytest.mark.parametrize("mode", ["json", "Tool", "", 1, None, True])
def test_a_bad_output_mode_is_refused(mode: Any) -> None:
    if mode is None:
        return  # None is the default: chosen from the tools
    with pytest.raises(InvalidArgument, match="output_mode"):
        OpenaiToolCallingAgent("p", [lookup], structural_output=Weather, output_mode=mode)


def test_output_mode_without_structural_output_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="structural_output"):
        OpenaiToolCallingAgent("p", [lookup], output_mode="tool")


async def test_a_paused_run_with_the_answer_beside_resumes(srv: FakeOpenAIServer) -> None:
    def book(city: str) -> str:
        """Book a trip."""
        return f"booked {city}"

    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("book", {"city": "Paris"}, id="c1"),
                ToolCall("final_result", PARIS, id="c2"),
            ]
        ),
        Reply(tool_calls=[ToolCall("final_result", PARIS, id="c3")]),
    )
    tools = [Tool(book, requires_approval=True)]
    agent = agent_on(make_llm(srv), tools=tools)

    paused = await agent.run("Book Paris and report.")
    assert paused.status == "needs_approval" and [p.tool for p in paused.pending] == ["book"]
    saved = RunState.from_json(paused.state.to_json())  # type: ignore[union-attr]

    fresh = agent_on(make_llm(srv), tools=tools)
    result = await fresh.run(resume=saved, approvals={"c1": True})

    assert result.output == Weather(**PARIS)
    sent = srv.chat.requests[1]["messages"]
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert results["c1"] == "booked Paris" and "not taken" in results["c2"].lower()


async def test_a_structural_output_instance_in_prompted_form_defaults_to_tools_too(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Reply(tool_calls=[ToolCall("final_result", PARIS, id="c1")]))
    output = StructuralOutput(Weather, native=False)
    agent = OpenaiToolCallingAgent("p", [lookup], structural_output=output).with_llm(make_llm(srv))
    assert await agent("Paris?") == Weather(**PARIS)
    assert names(srv.chat.requests[0]) == ["lookup", "final_result"]


async def test_a_stream_in_native_mode_still_shows_partials(srv: FakeOpenAIServer) -> None:
    srv.chat.script(json.dumps(PARIS, indent=1))
    agent = agent_on(make_llm(srv), tools=[])
    events = [event async for event in agent.stream("Paris?")]
    partials = [e.output for e in events if isinstance(e, PartialOutput)]
    assert len(partials) >= 2 and partials[-1].model_dump() == PARIS


# --- Anthropic ----------------------------------------------------------------------------------


@pytest.fixture
def claude() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


def anthropic_llm(server: FakeAnthropicServer) -> Anthropic:
    return Anthropic(
        "claude-test",
        api_key=server.api_key,
        base_url=server.base_url,
        retry=RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01),
        timeout=10.0,
    )


async def test_anthropic_gets_the_answer_tool_and_no_output_format(
    claude: FakeAnthropicServer,
) -> None:
    claude.messages.script(
        AnthropicReply(tool_calls=[ToolCall("lookup", {"city": "Paris"}, id="toolu_1")]),
        AnthropicReply(
            content="Here it is.", tool_calls=[ToolCall("final_result", PARIS, id="toolu_2")]
        ),
    )
    agent = agent_on(anthropic_llm(claude))

    events = [event async for event in agent.stream("Weather in Paris?")]

    assert isinstance(events[-1], FinalResult) and events[-1].output == Weather(**PARIS)
    partials = [e.output for e in events if isinstance(e, PartialOutput)]
    assert partials and partials[-1].model_dump() == PARIS
    for request in claude.messages.requests:
        assert [tool["name"] for tool in request["tools"]] == ["lookup", "final_result"]
        assert "output_config" not in request
        assert request.get("tool_choice", {"type": "auto"}) == {"type": "auto"}
    assert claude.messages.requests[0]["tools"][1]["input_schema"]["required"] == [
        "city",
        "celsius",
        "summary",
    ]


async def test_anthropic_answer_with_a_pending_call_and_json_text(
    claude: FakeAnthropicServer,
) -> None:
    claude.messages.script(
        AnthropicReply(
            tool_calls=[
                ToolCall("lookup", {"city": "Paris"}, id="toolu_1"),
                ToolCall("final_result", {**PARIS, "summary": "a guess"}, id="toolu_2"),
            ]
        ),
        AnthropicReply(content=json.dumps(PARIS)),
    )
    agent = agent_on(anthropic_llm(claude))

    assert await agent("Weather in Paris?") == Weather(**PARIS)
    second = claude.messages.requests[1]["messages"][-1]["content"]
    results = {block["tool_use_id"]: block for block in second if block["type"] == "tool_result"}
    assert set(results) == {"toolu_1", "toolu_2"}
    assert "not taken" in json.dumps(results["toolu_2"]).lower()


# --- Gemini -------------------------------------------------------------------------------------


GEMINI_KEY = "AIzaFAKE-test-key-0123456789"


@pytest.fixture
def gemini() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(api_key=GEMINI_KEY) as server:
        yield server


def gemini_llm(server: FakeGeminiServer) -> Gemini:
    return Gemini(
        "gemini-3-pro",
        api_key=GEMINI_KEY,
        base_url=server.base_url,
        retry=RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01),
        timeout=10.0,
    )


async def test_gemini_gets_the_answer_tool_and_no_response_schema(
    gemini: FakeGeminiServer,
) -> None:
    gemini.generate.script(
        GeminiReply(calls=[GeminiCall("lookup", {"city": "Paris"})]),
        GeminiReply(calls=[GeminiCall("final_result", PARIS)]),
    )
    agent = agent_on(gemini_llm(gemini))

    events = [event async for event in agent.stream("Weather in Paris?")]

    assert isinstance(events[-1], FinalResult) and events[-1].output == Weather(**PARIS)
    partials = [e.output for e in events if isinstance(e, PartialOutput)]
    assert partials and partials[-1].model_dump() == PARIS
    for request in gemini.generate.requests:
        declared = [d["name"] for t in request["tools"] for d in t["functionDeclarations"]]
        assert declared == ["lookup", "final_result"]
        config = request.get("generationConfig", {})
        assert not {"responseSchema", "responseJsonSchema", "responseMimeType"} & set(config)


async def test_gemini_json_text_is_taken(gemini: FakeGeminiServer) -> None:
    gemini.generate.script(GeminiReply(text=json.dumps(PARIS)))
    assert await agent_on(gemini_llm(gemini))("Paris?") == Weather(**PARIS)


async def test_streamed_pauses_show_no_answer_tool_call(srv: FakeOpenAIServer) -> None:
    def book(city: str) -> str:
        """Book a trip."""
        return f"booked {city}"

    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("book", {"city": "Paris"}, id="c1"),
                ToolCall("final_result", PARIS, id="c2"),
            ]
        )
    )
    agent = agent_on(make_llm(srv), tools=[Tool(book, requires_approval=True)])
    events = [event async for event in agent.stream("Book Paris.")]
    assert [e.name for e in events if isinstance(e, ToolCallEvent)] == ["book"]
    assert isinstance(events[-1], NeedsApproval)


async def test_an_answer_a_guardrail_sends_back_leaves_no_call_unanswered(
    srv: FakeOpenAIServer,
) -> None:
    from promptimus.guardrails import OutputGuardrail

    srv.chat.script(
        Reply(tool_calls=[ToolCall("final_result", {**PARIS, "summary": "idiot"}, id="c1")]),
        Reply(tool_calls=[ToolCall("final_result", PARIS, id="c2")]),
    )
    polite = OutputGuardrail(lambda text: "idiot" not in text, retry=1, name="polite")
    agent = agent_on(make_llm(srv), guardrails=[polite])

    assert await agent("Paris?") == Weather(**PARIS)
    sent = srv.chat.requests[1]["messages"]
    assert not any(m.get("tool_calls") for m in sent)  # the blocked answer kept as its JSON
    assert json.loads(sent[-2]["content"])["summary"] == "idiot"
    assert sent[-1]["role"] == "user" and "polite" in sent[-1]["content"]
