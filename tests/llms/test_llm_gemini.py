"""Gemini through the real google-genai SDK against FakeGeminiServer: what the server received
(contents, parts, signatures, config) and what the provider made of its answers."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.react_agent import ToolCallingAgent
from promptimus.agents.run_state import RunState
from promptimus.dto import (
    DocumentContent,
    History,
    ImageContent,
    Message,
    MessageRole,
    ThinkingBlock,
    ToolFunction,
    ToolRequest,
)
from promptimus.errors import (
    ContextWindowExceeded,
    EmptyReply,
    InvalidArgument,
    ModelResolutionError,
    ProviderConfigError,
    RequestRejected,
    RetryBudgetExhausted,
    StreamInterrupted,
    UnknownRequestOption,
)
from promptimus.llms import CachedLLM, FallbackLLM, Gemini, MemoryCache, ScriptedLLM, resolve
from promptimus.llms.capabilities import capabilities
from promptimus.modules.structural import StructuralOutput
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import FakeGeminiServer, GeminiCall, GeminiFault, GeminiReply
from promptimus.tools import Tool
from promptimus.transport import RetryPolicy

KEY = "AIzaFAKE-test-key-0123456789"


@pytest.fixture
def srv() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(api_key=KEY, require_auth=True) as server:
        yield server


class Waits:
    """A RetryPolicy sleep that records each wait instead of spending it."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_llm(srv: FakeGeminiServer, waits: Waits | None = None, **kwargs: Any) -> Gemini:
    retry = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.01, sleep=waits or Waits())
    kwargs.setdefault("retry", retry)
    kwargs.setdefault("timeout", 10.0)
    return Gemini("gemini-3-pro", api_key=KEY, base_url=srv.base_url, **kwargs)


def user(text: str, **kw: Any) -> Message:
    return Message(role=MessageRole.USER, content=text, **kw)


def sent(srv: FakeGeminiServer, index: int = -1) -> dict[str, Any]:
    body: dict[str, Any] = srv.generate.requests[index]
    return body


# --- one call ----------------------------------------------------------------------------------


async def test_a_call_sends_system_instruction_roles_and_options(srv: FakeGeminiServer) -> None:
    srv.generate.script(GeminiReply(text="Hello!", usage={"cachedContentTokenCount": 2}))
    llm = make_llm(srv, call_kwargs={"temperature": 0.2})
    history = [
        Message(role=MessageRole.SYSTEM, content="Be brief."),
        user("hi there"),
        Message(role=MessageRole.ASSISTANT, content="Hello."),
        user("again"),
    ]

    reply = await llm.achat(history, max_tokens=50, stop="END")

    request = srv.requests[-1]
    assert request.path == "/v1beta/models/gemini-3-pro:generateContent"
    assert request.headers["x-goog-api-key"] == KEY
    assert request.json == {
        "contents": [
            {"role": "user", "parts": [{"text": "hi there"}]},
            {"role": "model", "parts": [{"text": "Hello."}]},
            {"role": "user", "parts": [{"text": "again"}]},
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "generationConfig": {"temperature": 0.2, "maxOutputTokens": 50, "stopSequences": ["END"]},
    }
    assert reply.content == "Hello!" and reply.finish_reason == "stop"
    assert reply.model_name == "gemini-3-pro"
    assert reply.usage is not None
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (6, 1)
    assert reply.usage.cached_tokens == 2 and reply.usage.total_tokens == 7
    assert llm.request_count == 1 and llm.usage.prompt_tokens == 6


async def test_thoughts_are_the_reasoning_and_thoughts_count_as_completion(
    srv: FakeGeminiServer,
) -> None:
    srv.generate.script(GeminiReply(text="42", thought="six times seven", thought_signature="T1"))
    llm = make_llm(srv, thinking=1024)

    reply = await llm.achat([user("answer?")])

    config = sent(srv)["generationConfig"]
    assert config["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 1024}
    assert reply.content == "42" and reply.reasoning == "six times seven"
    assert reply.thinking == [
        ThinkingBlock(provider="gemini", text="six times seven", signature="T1")
    ]
    assert reply.usage is not None
    assert reply.usage.reasoning_tokens == 3 and reply.usage.completion_tokens == 4


@pytest.mark.parametrize(
    ("thinking", "config"),
    [
        (True, {"includeThoughts": True}),
        (False, {"thinkingBudget": 0}),
        (-1, {"includeThoughts": True, "thinkingBudget": -1}),
        ("high", {"includeThoughts": True, "thinkingLevel": "high"}),
        ({"thinkingLevel": "low"}, {"thinkingLevel": "low"}),
    ],
)
async def test_thinking_maps_to_thinking_config(
    srv: FakeGeminiServer, thinking: Any, config: dict[str, Any]
) -> None:
    await make_llm(srv, thinking=thinking).achat([user("q")])
    assert sent(srv)["generationConfig"]["thinkingConfig"] == config


@pytest.mark.parametrize("thinking", [-2, "loud", 1.5, ["x"]])
def test_a_thinking_setting_it_cannot_use_is_refused(thinking: Any) -> None:
    with pytest.raises(InvalidArgument, match="thinking"):
        Gemini("gemini-3-pro", api_key=KEY, thinking=thinking)


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -1.0, "10", True])
def test_a_timeout_it_cannot_use_is_refused(timeout: Any) -> None:
    with pytest.raises(InvalidArgument, match="timeout"):
        Gemini("gemini-3-pro", api_key=KEY, timeout=timeout)


async def test_an_unknown_option_is_named_before_any_request(srv: FakeGeminiServer) -> None:
    with pytest.raises(UnknownRequestOption, match="logit_bias"):
        await make_llm(srv).achat([user("q")], logit_bias={})
    assert srv.requests == []


async def test_images_and_pdfs_are_inline_data(srv: FakeGeminiServer) -> None:
    image = ImageContent(url="data:image/png;base64,iVBORw0KGgo=")
    remote = ImageContent(url="https://example.com/cat.jpg")
    pdf = DocumentContent.from_bytes(b"%PDF-1.4 fake", name="a.pdf")

    await make_llm(srv).achat([user("what is this?", images=[image, remote], documents=[pdf])])

    assert sent(srv)["contents"][0]["parts"] == [
        {"text": "what is this?"},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
        {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.jpg"}},
        {"inlineData": {"mimeType": "application/pdf", "data": pdf.data}},
    ]


async def test_a_reply_with_nothing_in_it_is_never_a_success(srv: FakeGeminiServer) -> None:
    srv.generate.script(GeminiReply(text=""), GeminiReply(text=""))
    with pytest.raises(EmptyReply):
        await make_llm(srv).achat([user("q")])
    assert len(srv.generate.requests) == 2  # retried once, then raised


# --- streams -----------------------------------------------------------------------------------


async def test_a_stream_delivers_thoughts_text_calls_and_usage(srv: FakeGeminiServer) -> None:
    srv.generate.script(
        GeminiReply(
            text="Let me add.",
            thought="adding",
            calls=[GeminiCall("add", {"a": 1, "b": 2}, id="c1")],
            chunks=3,
        )
    )
    llm = make_llm(srv, thinking=True)

    deltas = [delta async for delta in llm.astream([user("1+2?")])]
    reply = pm.llms.accumulate(deltas)

    assert srv.requests[-1].path.endswith(":streamGenerateContent")
    assert srv.requests[-1].query == "alt=sse"
    assert len(deltas) == 5
    assert reply.content == "Let me add." and reply.reasoning == "adding"
    assert reply.finish_reason == "tool_calls"
    assert reply.tool_calls is not None
    call = reply.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "c1",
        "add",
        {"a": 1, "b": 2},
    )
    assert call.extra_content is not None
    assert call.extra_content["google"]["thought_signature"]
    assert reply.usage is not None and reply.usage.reasoning_tokens == 1


async def test_a_stream_cut_after_output_is_interrupted(srv: FakeGeminiServer) -> None:
    srv.generate.script(GeminiFault.cut(after_chunks=1))
    with pytest.raises(StreamInterrupted):
        async for _ in make_llm(srv).astream([user("tell me a long story please")]):
            pass
    assert len(srv.generate.requests) == 1


async def test_a_connection_broken_mid_stream_is_interrupted(srv: FakeGeminiServer) -> None:
    srv.generate.script(GeminiFault.cut(after_chunks=1, clean=False))
    with pytest.raises(StreamInterrupted):
        async for _ in make_llm(srv).astream([user("tell me a long story please")]):
            pass


async def test_a_stream_that_fails_before_output_is_retried(srv: FakeGeminiServer) -> None:
    srv.generate.script(
        GeminiFault.status(503), GeminiFault.cut(after_chunks=0, clean=False), "fine"
    )
    waits = Waits()
    deltas = [d async for d in make_llm(srv, waits).astream([user("q")])]
    assert pm.llms.accumulate(deltas).content == "fine"
    assert len(srv.generate.requests) == 3 and len(waits.waits) == 2


# --- errors in Gemini's terms ------------------------------------------------------------------


async def test_resource_exhausted_waits_as_the_server_asks(srv: FakeGeminiServer) -> None:
    srv.generate.script(
        GeminiFault.status(429, retry_after=3),
        GeminiFault.status(429, retry_delay=7),
        GeminiFault.status(503),
        "done",
    )
    waits = Waits()
    reply = await make_llm(srv, waits).achat([user("q")])
    assert reply.content == "done"
    assert waits.waits[:2] == [3.0, 7.0] and len(waits.waits) == 3
    assert len(srv.generate.requests) == 4


async def test_retries_end_with_the_budget(srv: FakeGeminiServer) -> None:
    srv.generate.script(*[GeminiFault.status(503)] * 4)
    with pytest.raises(RetryBudgetExhausted, match="503"):
        await make_llm(srv).achat([user("q")])
    assert len(srv.generate.requests) == 4


async def test_invalid_argument_is_rejected_and_never_retried(srv: FakeGeminiServer) -> None:
    srv.generate.script(GeminiFault.status(400, "Bad thing in contents[0]"))
    with pytest.raises(RequestRejected, match="Bad thing") as info:
        await make_llm(srv).achat([user("q")])
    assert info.value.status == 400 and not isinstance(info.value, ContextWindowExceeded)
    assert len(srv.generate.requests) == 1


@pytest.mark.parametrize(("key", "status"), [("AIza-wrong-key-999", 403), ("", 401)])
async def test_a_refused_key_is_named_never_retried_and_never_shown(
    srv: FakeGeminiServer, key: str, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    llm = Gemini("gemini-3-pro", api_key=key or "placeholder", base_url=srv.base_url)
    if not key:
        srv.require_auth = False
        srv.generate.script(GeminiFault.status(401))
    caplog.set_level(logging.DEBUG)
    with pytest.raises(RequestRejected, match="API key") as info:
        await llm.achat([user("q")])
    assert info.value.status == status
    assert len(srv.requests) == 1
    shown = "".join(traceback.format_exception(info.value)) + caplog.text + repr(llm)
    assert "AIza-wrong-key-999" not in shown and "placeholder" not in shown


async def test_an_error_quoting_the_key_reaches_no_message_log_or_traceback(
    srv: FakeGeminiServer, caplog: pytest.LogCaptureFixture
) -> None:
    srv.generate.script(GeminiFault.echo_key(400))
    caplog.set_level(logging.DEBUG)
    with pytest.raises(RequestRejected) as info:
        await make_llm(srv).achat([user("q")])
    assert "API key not valid" in str(info.value)
    shown = "".join(traceback.format_exception(info.value)) + caplog.text
    chain: list[BaseException] = []
    error: BaseException | None = info.value
    while error is not None:
        chain.append(error)
        error = error.__cause__ or error.__context__
    shown += "".join(repr(vars(e)) for e in chain)
    assert KEY not in shown and "***" in shown


async def test_a_prompt_over_the_limit_is_a_context_window_error(srv: FakeGeminiServer) -> None:
    srv.context_window = 5
    with pytest.raises(ContextWindowExceeded) as info:
        await make_llm(srv).achat([user("one two three four five six seven")])
    assert (info.value.prompt_tokens, info.value.context_window) == (7, 5)
    assert len(srv.generate.requests) == 1


async def test_a_missing_key_is_named_before_any_request(
    srv: FakeGeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(ProviderConfigError, match="GEMINI_API_KEY"):
        await Gemini("gemini-3-pro", base_url=srv.base_url).achat([user("q")])
    assert srv.requests == []
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    reply = await Gemini("gemini-3-pro", base_url=srv.base_url).achat([user("q")])
    assert reply.content == "echo: q"


def test_the_model_string_resolves_with_its_key_and_base_url() -> None:
    env = {"GOOGLE_API_KEY": KEY, "GEMINI_BASE_URL": "http://127.0.0.1:9"}
    llm = resolve("gemini:gemini-2.5-flash", env=env)
    assert isinstance(llm, Gemini)
    assert (llm.model_name, llm.base_url) == ("gemini-2.5-flash", "http://127.0.0.1:9")
    assert KEY not in repr(llm)
    with pytest.raises(ModelResolutionError, match="GEMINI_API_KEY"):
        resolve("gemini:gemini-2.5-flash", env={})


def test_importing_promptimus_imports_no_google_module() -> None:
    code = (
        "import sys, promptimus, promptimus.llms, promptimus.testing\n"
        "promptimus.llms.Gemini\n"
        "print(sorted(m for m in sys.modules if m.startswith('google')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# --- thought signatures in tool loops ----------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def model_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for c in body["contents"] if c["role"] == "model" for p in c["parts"]]


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_three_step_tool_loop_sends_every_signature_back(
    srv: FakeGeminiServer, streamed: bool
) -> None:
    srv.generate.script(
        GeminiReply(calls=[GeminiCall("add", {"a": 1, "b": 2})]),
        GeminiReply(
            calls=[GeminiCall("add", {"a": 3, "b": 4}), GeminiCall("add", {"a": 5, "b": 6})]
        ),
        GeminiReply(text="The sums are 3, 7 and 11.", signature="TEXT-SIG"),
    )
    agent = OpenaiToolCallingAgent("You add.", [add]).with_llm(make_llm(srv, thinking="high"))

    if streamed:
        events = [event async for event in agent.stream("add things")]
        assert events
        reply = agent.memory.as_list()[-1]
    else:
        reply = await agent("add things")

    assert reply.content == "The sums are 3, 7 and 11."
    first, second, third = srv.generate.requests
    assert first["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "add",
                    "description": "Add two integers.",
                    "parametersJsonSchema": first["tools"][0]["functionDeclarations"][0][
                        "parametersJsonSchema"
                    ],
                }
            ]
        }
    ]
    assert first["systemInstruction"] == {"parts": [{"text": "You add."}]}
    calls = [p for p in model_parts(third) if "functionCall" in p]
    assert [p["functionCall"]["args"] for p in calls] == [
        {"a": 1, "b": 2},
        {"a": 3, "b": 4},
        {"a": 5, "b": 6},
    ]
    signatures = [p["thoughtSignature"] for p in calls]
    assert len(set(signatures)) == 3 and all(signatures)
    assert model_parts(second) == model_parts(third)[:1]
    results = [c["parts"] for c in third["contents"] if c["role"] == "user"][1:]
    assert [[p["functionResponse"]["response"] for p in parts] for parts in results] == [
        [{"output": "3"}],
        [{"output": "7"}, {"output": "11"}],
    ]
    ids = [p["functionCall"]["id"] for p in calls]
    assert [p["functionResponse"]["id"] for parts in results for p in parts] == ids
    assert reply.thinking == [ThinkingBlock(provider="gemini", signature="TEXT-SIG")]

    # the next turn sends the answer's own signature back on its text part
    await agent("and now?")
    last_model = model_parts(srv.generate.requests[-1])[-1]
    assert last_model == {"text": "The sums are 3, 7 and 11.", "thoughtSignature": "TEXT-SIG"}


async def test_the_server_refuses_a_call_whose_signature_was_dropped(
    srv: FakeGeminiServer,
) -> None:
    srv.generate.script(GeminiReply(calls=[GeminiCall("add", {"a": 1, "b": 2}, id="c1")]))
    llm = make_llm(srv)
    reply = await llm.achat([user("add")])
    assert reply.tool_calls is not None
    stripped = reply.model_copy(
        update={"tool_calls": [reply.tool_calls[0].model_copy(update={"extra_content": None})]}
    )
    result = Message(role=MessageRole.TOOL, content="3", tool_call_id="c1")

    with pytest.raises(RequestRejected, match="thought_signature"):
        await llm.achat([user("add"), stripped, result])
    assert len(srv.generate.requests) == 2  # never retried

    answer = await llm.achat([user("add"), reply, result])
    assert answer.content.startswith("echo")


async def test_a_react_agent_runs_on_gemini(srv: FakeGeminiServer) -> None:
    srv.generate.script(
        'Thought: add\nAction: add\nAction Input: {"a": 2, "b": 2}',
        "Thought: done\nFinal Answer: 4",
    )
    agent = ToolCallingAgent([Tool(add)], prompt="You add.").with_llm(make_llm(srv))
    reply = await agent("2+2?")
    assert "4" in reply.content
    assert len(srv.generate.requests) == 2


# --- structured output -------------------------------------------------------------------------


class Weather(BaseModel):
    city: str
    celsius: float


async def test_structured_output_uses_the_json_schema_natively(srv: FakeGeminiServer) -> None:
    srv.generate.script('{"city": "Oslo", "celsius": -3}')
    extract = StructuralOutput(Weather).with_llm(make_llm(srv))
    assert await extract("weather?") == Weather(city="Oslo", celsius=-3)
    config = sent(srv)["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["properties"]["city"] == {"title": "City", "type": "string"}


@pytest.mark.parametrize(("json_mode", "expected"), [(False, "json_object"), (True, "prompted")])
async def test_structured_output_falls_back_on_a_server_that_refuses_it(
    srv: FakeGeminiServer, json_mode: bool, expected: str
) -> None:
    srv.reject_response_schema = True
    srv.reject_json_mode = json_mode
    llm = make_llm(srv)
    srv.generate.respond_with(lambda body: '{"city": "Oslo", "celsius": 1}')
    extract = StructuralOutput(Weather).with_llm(llm)

    assert await extract("weather?") == Weather(city="Oslo", celsius=1)
    assert capabilities(llm).response_format == expected
    last = sent(srv)
    assert "responseJsonSchema" not in last.get("generationConfig", {})
    if expected == "prompted":
        assert "responseMimeType" not in last.get("generationConfig", {})
        assert '"celsius"' in last["systemInstruction"]["parts"][-1]["text"]


# --- the seams every provider plugs into --------------------------------------------------------


async def test_usage_and_cost_are_tracked_per_module(srv: FakeGeminiServer) -> None:
    srv.generate.script(GeminiReply(text="a b", thought="t t t", usage={"promptTokenCount": 10}))
    agent = OpenaiToolCallingAgent("p").with_llm(make_llm(srv, thinking=True))
    with pm.track_usage(pricing={"gemini-3-pro": (1.0, 10.0)}) as usage:
        await agent("q")
    total = usage.total
    assert (total.prompt_tokens, total.completion_tokens) == (10, 5)
    assert total.reasoning_tokens == 3
    assert total.cost == pytest.approx((10 * 1.0 + 5 * 10.0) / 1_000_000)


async def test_a_response_cache_answers_the_second_call(srv: FakeGeminiServer) -> None:
    llm = CachedLLM(make_llm(srv, call_kwargs={"temperature": 0}), MemoryCache())
    first = await llm.achat([user("cached?")])
    second = await llm.achat([user("cached?")])
    assert first.content == second.content == "echo: cached?"
    assert len(srv.generate.requests) == 1


async def test_a_failing_gemini_falls_back(srv: FakeGeminiServer) -> None:
    srv.generate.script(*[GeminiFault.status(503)] * 4)
    backup = ScriptedLLM(["from the backup"])
    llm = FallbackLLM(make_llm(srv), backup)
    reply = await llm.achat([user("q")])
    assert reply.content == "from the backup"


async def test_what_a_reply_keeps_survives_a_session_store(
    srv: FakeGeminiServer, tmp_path: Any
) -> None:
    srv.generate.script(
        GeminiReply(
            calls=[GeminiCall("add", {"a": 1, "b": 2})], thought="sum", thought_signature="TS"
        ),
        GeminiReply(text="3", signature="END-SIG"),
    )
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    agent = OpenaiToolCallingAgent("You add.", [add]).with_llm(make_llm(srv, thinking=True))
    async with pm.Session("ann", store=store):
        await agent("1+2?")
    sent_before = model_parts(sent(srv))

    fresh = OpenaiToolCallingAgent("You add.", [add]).with_llm(make_llm(srv, thinking=True))
    async with pm.Session("ann", store=store):
        await fresh("and again?")
    resent = model_parts(sent(srv))
    assert resent[: len(sent_before)] == sent_before
    assert resent[0] == {"text": "sum", "thought": True, "thoughtSignature": "TS"}
    assert resent[1]["thoughtSignature"].startswith("c2ln")
    assert resent[-1] == {"text": "3", "thoughtSignature": "END-SIG"}
    await store.aclose()


async def test_what_a_reply_keeps_survives_a_run_state() -> None:
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    with FakeGeminiServer(api_key=KEY) as server:
        server.generate.script(
            GeminiReply(calls=[GeminiCall("delete", {"path": "a"}, id="c_del")]), "Deleted."
        )
        agent = OpenaiToolCallingAgent("p", [Tool(delete, requires_approval=True)])
        agent.with_llm(make_llm(server))
        with pm.Session():
            paused = await agent.run("clean up")
        assert paused.status == "needs_approval"
        saved = paused.state.to_json()

        fresh = OpenaiToolCallingAgent("p", [Tool(delete, requires_approval=True)])
        fresh.with_llm(make_llm(server))
        with pm.Session():
            done = await fresh.run(resume=RunState.from_json(saved), approvals={"c_del": True})

    assert done.output.content == "Deleted."
    call = model_parts(server.generate.requests[-1])[0]
    assert call["functionCall"]["id"] == "c_del" and call["thoughtSignature"].startswith("c2ln")


def test_a_history_with_signatures_round_trips_through_json() -> None:
    call = ToolRequest(
        id="c1",
        function=ToolFunction(name="add", arguments="{}"),
        extra_content={"google": {"thought_signature": "SIG"}},
    )
    message = Message(
        role=MessageRole.ASSISTANT,
        tool_calls=[call],
        thinking=[ThinkingBlock(provider="gemini", text="t", signature="S2")],
    )
    again = History.validate_json(History.dump_json([message]))
    assert again == [message]


async def test_calls_share_a_concurrency_cap(srv: FakeGeminiServer) -> None:
    llm = make_llm(srv, max_concurrency=1)
    replies = await asyncio.gather(*(llm.achat([user(f"q{i}")]) for i in range(4)))
    assert sorted(r.content for r in replies) == [f"echo: q{i}" for i in range(4)]
    assert llm.request_count == 4


async def test_an_error_event_inside_a_stream_is_raised_in_promptimus_terms(
    srv: FakeGeminiServer,
) -> None:
    srv.generate.script(GeminiFault.stream_error(400, "Request contains an invalid argument."))
    with pytest.raises(RequestRejected, match="invalid argument") as info:
        async for _ in make_llm(srv).astream([user("a long question here")]):
            pass
    assert info.value.status == 400
    assert len(srv.generate.requests) == 1

    srv.generate.script(GeminiFault.stream_error(503, after_chunks=1))
    with pytest.raises(pm.errors.ProviderError):
        async for _ in make_llm(srv).astream([user("a long question here")]):
            pass


async def test_tool_choice_and_results_with_images_reach_the_wire(srv: FakeGeminiServer) -> None:
    tools = [{"type": "function", "function": {"name": "look", "parameters": {"type": "object"}}}]
    picture = ImageContent(url="data:image/png;base64,AAAA")
    history = [
        user("look"),
        Message(
            role=MessageRole.ASSISTANT,
            tool_calls=[ToolRequest(id="c1", function=ToolFunction(name="look"))],
        ),
        Message(role=MessageRole.TOOL, content="a cat", tool_call_id="c1", images=[picture]),
    ]

    await make_llm(srv).achat(history, tools=tools, tool_choice="required")
    await make_llm(srv).achat(
        history, tools=tools, tool_choice={"type": "function", "function": {"name": "look"}}
    )

    first, second = srv.generate.requests
    assert first["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert second["toolConfig"]["functionCallingConfig"]["allowedFunctionNames"] == ["look"]
    assert first["contents"][1] == {
        "role": "model",
        "parts": [{"functionCall": {"name": "look", "args": {}, "id": "c1"}}],
    }
    assert first["contents"][2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "look", "response": {"output": "a cat"}, "id": "c1"}},
            {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
        ],
    }


async def test_calls_without_ids_get_ids_their_results_answer_to(srv: FakeGeminiServer) -> None:
    srv.generate.script(
        GeminiReply(calls=[GeminiCall("add", {"a": 1, "b": 1}, signature=None)] * 2),
        "2 and 2",
    )
    agent = OpenaiToolCallingAgent("You add.", [add]).with_llm(make_llm(srv))
    assert (await agent("1+1 twice?")).content == "2 and 2"
    last = sent(srv)
    calls = [p["functionCall"]["id"] for p in model_parts(last) if "functionCall" in p]
    results = [
        p["functionResponse"]
        for c in last["contents"]
        for p in c["parts"]
        if "functionResponse" in p
    ]
    assert len(set(calls)) == 2
    assert [r["id"] for r in results] == calls and {r["name"] for r in results} == {"add"}


async def test_thinking_per_call_overrides_the_providers(srv: FakeGeminiServer) -> None:
    llm = make_llm(srv, thinking=True)
    await llm.achat([user("q")], thinking=False)
    await llm.achat([user("q")], thinking=None)
    first, second = srv.generate.requests
    assert first["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 0}
    assert "generationConfig" not in second
    with pytest.raises(InvalidArgument):
        await llm.achat([user("q")], thinking="loud")


async def test_a_blocked_prompt_is_an_empty_reply_naming_the_reason(srv: FakeGeminiServer) -> None:
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}}
    srv.generate.script(GeminiFault("status", 200, blocked), GeminiFault("status", 200, blocked))
    with pytest.raises(EmptyReply, match="blocked"):
        await make_llm(srv).achat([user("q")])


async def test_a_body_that_is_not_json_is_malformed_and_retried_once(
    srv: FakeGeminiServer,
) -> None:
    srv.generate.script(GeminiFault.malformed(), GeminiFault.malformed())
    with pytest.raises(pm.errors.MalformedReply):
        await make_llm(srv).achat([user("q")])
    assert len(srv.generate.requests) == 2

    srv.generate.script(GeminiFault.malformed(), "fine")
    deltas = [d async for d in make_llm(srv).astream([user("q")])]
    assert pm.llms.accumulate(deltas).content == "fine"

    srv.generate.script(GeminiFault.malformed(after_chunks=1))
    with pytest.raises(pm.errors.MalformedReply):
        async for _ in make_llm(srv).astream([user("a long question here")]):
            pass


async def test_a_durable_run_sends_every_signature_back(
    srv: FakeGeminiServer, tmp_path: Any
) -> None:
    from dbos import DBOS
    from durable_support import configure

    from promptimus.durable import DurableAgent

    srv.generate.script(
        GeminiReply(calls=[GeminiCall("add", {"a": 1, "b": 2})]),
        GeminiReply(calls=[GeminiCall("add", {"a": 3, "b": 4})]),
        "3 and 7.",
    )
    configure(tmp_path / "runs.sqlite")
    try:
        agent = OpenaiToolCallingAgent("You add.", [add]).with_llm(make_llm(srv))
        durable = DurableAgent(agent, name="gemini-adds")
        DBOS.launch()
        result = await durable.run("1+2 and 3+4?", workflow_id="g-1")
    finally:
        DBOS.destroy(destroy_registry=True)

    assert result.status == "completed" and result.output.content == "3 and 7."
    calls = [p for p in model_parts(sent(srv)) if "functionCall" in p]
    assert len(calls) == 2 and all(p["thoughtSignature"] for p in calls)
