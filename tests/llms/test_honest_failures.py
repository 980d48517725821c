"""Honest failures against real servers (issue 8, section 5), reproduced with the fake server's
public faults: cut streams, errors inside streams, context-window errors in each server's dialect,
and servers that reject `response_format: json_schema`. Every test counts the requests the fake
server saw: a deterministic rejection is sent once, never retried."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from pydantic import BaseModel

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import FinalResult, TextDelta
from promptimus.dto import Message, MessageDelta, MessageRole
from promptimus.errors import (
    ContextWindowExceeded,
    ProviderResponseError,
    ProviderUnavailable,
    RequestRejected,
    RetryBudgetExhausted,
    StreamInterrupted,
)
from promptimus.llms import OpenAILike, aaccumulate
from promptimus.modules import StructuralOutput
from promptimus.testing import (
    CONTEXT_DIALECTS,
    FakeOpenAIServer,
    Fault,
    Reply,
    ResponseFormatRejection,
)
from promptimus.transport import RetryPolicy

WAIT = 30.0  # generous bound on every awaited run, so a regression fails instead of hanging


class City(BaseModel):
    name: str
    population: int


CITY_JSON = '{"name": "Oslo", "population": 709000}'


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def make_llm(srv: FakeOpenAIServer, retries: int = 3) -> OpenAILike:
    retry = RetryPolicy(max_retries=retries, base_delay=0.001, max_delay=0.01)
    return OpenAILike("fake-model", api_key=srv.api_key, base_url=srv.base_url, retry=retry)


def user(text: str) -> Message:
    return Message(role=MessageRole.USER, content=text)


async def drain(stream: AsyncIterator[Any]) -> list[Any]:
    async def collect() -> list[Any]:
        return [item async for item in stream]

    return await asyncio.wait_for(collect(), WAIT)


# --- streams that end without a finish_reason ---------------------------------------------------


async def test_stream_cut_before_its_finish_chunk_raises_stream_interrupted(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Fault.cut(), "never sent")
    srv.chat.respond_with(None)
    received: list[MessageDelta] = []
    with pytest.raises(StreamInterrupted, match="stream interrupted") as caught:
        async for delta in make_llm(srv).astream([user("The answer is forty two")]):
            received.append(delta)
    text = "".join(d.content or "" for d in received)
    assert text == "echo: The answer is forty two"  # every chunk but the finish chunk arrived
    error = caught.value
    assert error.chunks == len(received) > 1
    assert error.content_chars == len(text)
    assert error.finish_reason is None
    assert isinstance(error, ProviderUnavailable)
    assert len(srv.chat.requests) == 1  # output was delivered: not retried


async def test_connection_closed_mid_stream_raises_stream_interrupted(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Fault.cut(after_chunks=3, clean=False))
    with pytest.raises(StreamInterrupted, match="broke") as caught:
        await asyncio.wait_for(aaccumulate(make_llm(srv).astream([user("a b c d e f")])), WAIT)
    assert caught.value.chunks == 3
    assert len(srv.chat.requests) == 1


async def test_a_stream_that_ends_before_its_first_chunk_is_raised_not_retried(
    srv: FakeOpenAIServer,
) -> None:
    # A server that closed a request's stream cleanly without a chunk decided to: retrying the
    # same request would only repeat it (a storm on a deterministic failure).
    srv.chat.script(Fault.cut(after_chunks=0), "never")
    with pytest.raises(StreamInterrupted, match="0 chunk"):
        await asyncio.wait_for(aaccumulate(make_llm(srv).astream([user("x")])), WAIT)
    assert len(srv.chat.requests) == 1


async def test_old_llama_cpp_error_line_is_not_an_empty_answer(srv: FakeOpenAIServer) -> None:
    # llama.cpp used to send errors (a context overflow among them) as an SSE `error:` field,
    # which the SDK skips: the client saw an empty stream and, before, an empty success.
    srv.chat.script(Fault.stream_error({"message": "context shift disabled"}, sse_field="error"))
    with pytest.raises(StreamInterrupted, match="stream interrupted"):
        await asyncio.wait_for(aaccumulate(make_llm(srv).astream([user("x")])), WAIT)
    assert len(srv.chat.requests) == 1


async def test_a_connection_error_before_the_first_chunk_is_still_retried(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Fault.cut(after_chunks=0, clean=False), "second try")
    message = await asyncio.wait_for(aaccumulate(make_llm(srv).astream([user("x")])), WAIT)
    assert (message.content, message.finish_reason) == ("second try", "stop")
    assert len(srv.chat.requests) == 2


async def test_error_event_inside_a_stream_is_raised_with_what_the_server_said(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Fault.stream_error({"message": "slot crashed", "type": "server_error"}, 2))
    with pytest.raises(ProviderResponseError, match="slot crashed"):
        await drain(make_llm(srv).astream([user("a b c")]))
    assert len(srv.chat.requests) == 1


async def test_agent_stream_raises_on_a_cut_stream_and_keeps_memory(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Fault.cut(), Fault.cut(after_chunks=0))
    agent = OpenaiToolCallingAgent("You answer.").with_llm(make_llm(srv))
    events: list[Any] = []
    with pytest.raises(StreamInterrupted):
        async for event in agent.stream("Tell me a long story"):
            events.append(event)
    assert any(isinstance(e, TextDelta) for e in events)
    assert not any(isinstance(e, FinalResult) for e in events)
    assert len(agent.memory) == 0  # a cut reply is never remembered as the answer
    with pytest.raises(StreamInterrupted, match="0 chunk"):  # ended at once
        await drain(agent.stream("again"))
    assert len(srv.chat.requests) == 2
    assert len(agent.memory) == 0


async def test_structured_output_over_a_cut_stream_is_not_sent_back_as_a_parse_error(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script(Fault.cut(), CITY_JSON)
    srv.chat.respond_with(lambda body: Reply(content=CITY_JSON))
    agent = OpenaiToolCallingAgent("You answer.", structural_output=City)
    agent.with_llm(make_llm(srv))
    with pytest.raises(StreamInterrupted):
        await drain(agent.stream("Oslo?"))
    assert len(srv.chat.requests) == 1  # no "your JSON is invalid" retry of a cut reply


class _NoFinishLLM:
    """A custom LLM whose astream forgets the finish_reason."""

    model_name = "custom"

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        return Message(role=MessageRole.ASSISTANT, content="hi", finish_reason="stop")

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        yield MessageDelta(content="hi")


async def test_agent_stream_checks_the_finish_reason_of_any_llm() -> None:
    agent = OpenaiToolCallingAgent("p").with_llm(_NoFinishLLM())
    with pytest.raises(StreamInterrupted, match="must end with a delta that carries"):
        await drain(agent.stream("x"))
    with pytest.raises(StreamInterrupted):
        await aaccumulate(_NoFinishLLM().astream([user("x")]))


async def test_a_reply_body_cut_halfway_is_retried(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.cut(), "whole")
    agent = OpenaiToolCallingAgent("p").with_llm(make_llm(srv))
    result = await asyncio.wait_for(agent.run("x"), WAIT)
    assert result.output.content == "whole"
    assert len(srv.chat.requests) == 2


# --- context window ------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", CONTEXT_DIALECTS)
async def test_context_overflow_raises_context_window_exceeded_once(
    srv: FakeOpenAIServer, dialect: Any
) -> None:
    srv.chat.script(Fault.context_overflow(n_ctx=4096, n_prompt_tokens=5000, dialect=dialect))
    with pytest.raises(ContextWindowExceeded, match="context window") as caught:
        await make_llm(srv).achat([user("a very long prompt")])
    error = caught.value
    assert (error.context_window, error.prompt_tokens, error.status) == (4096, 5000, 400)
    assert "4096" in error.server_message
    assert isinstance(error, RequestRejected)
    assert len(srv.chat.requests) == 1


async def test_context_overflow_reported_as_a_500_is_not_retried(srv: FakeOpenAIServer) -> None:
    # some servers (older llama.cpp builds, proxies) report it with a server-error status
    _, body = _llama_overflow()
    srv.chat.script(Fault.status(500, body=body), "never")
    with pytest.raises(ContextWindowExceeded):
        await make_llm(srv).achat([user("x")])
    assert len(srv.chat.requests) == 1


def _llama_overflow() -> tuple[int, Any]:
    from promptimus.testing.payloads import context_overflow_body

    return context_overflow_body("llama.cpp", 2048, 3000)


async def test_context_overflow_inside_a_stream(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.context_overflow(512, 600, "llama.cpp", mid_stream=True))
    with pytest.raises(ContextWindowExceeded) as caught:
        await drain(make_llm(srv).astream([user("x")]))
    assert (caught.value.context_window, caught.value.prompt_tokens) == (512, 600)
    assert len(srv.chat.requests) == 1


async def test_server_context_window_rejects_only_what_does_not_fit() -> None:
    with FakeOpenAIServer(context_window=10, context_dialect="vllm") as srv:
        llm = make_llm(srv)
        assert (await llm.achat([user("short")])).content == "echo: short"
        with pytest.raises(ContextWindowExceeded) as caught:
            await llm.achat([user("one two three four five six"), user("7 8 9 10 11")])
        assert (caught.value.context_window, caught.value.prompt_tokens) == (10, 11)
        agent = OpenaiToolCallingAgent("system words here").with_llm(llm)
        with pytest.raises(ContextWindowExceeded):
            await drain(agent.stream("a b c d e f g h i j k"))
        assert len(srv.chat.requests) == 3


# --- requests the server rejects are not retried -------------------------------------------------

VALIDATION_BODY = {"detail": [{"loc": ["body", "response_format"], "msg": "bad", "type": "x"}]}


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (500, VALIDATION_BODY),
        (500, {"error": {"message": "bad field", "type": "invalid_request_error"}}),
        (500, {"object": "error", "message": "bad", "type": "BadRequestError", "code": 400}),
        (422, VALIDATION_BODY),
        (400, None),
    ],
)
async def test_request_validation_errors_are_sent_once(
    srv: FakeOpenAIServer, status: int, body: Any
) -> None:
    srv.chat.script(Fault.status(status, body=body), "never")
    with pytest.raises(RequestRejected) as caught:
        await make_llm(srv).achat([user("x")])
    assert caught.value.status == status
    assert len(srv.chat.requests) == 1


async def test_a_plain_server_error_is_still_retried(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.status(500), Fault.status(502), "fine")
    assert (await make_llm(srv).achat([user("x")])).content == "fine"
    assert len(srv.chat.requests) == 3


async def test_the_sdk_adds_no_retries_of_its_own(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.status(503), "never")
    with pytest.raises(RetryBudgetExhausted):
        await make_llm(srv, retries=0).achat([user("x")])
    assert len(srv.chat.requests) == 1


# --- structured output degrades on servers that reject json_schema -------------------------------


def _formats(srv: FakeOpenAIServer) -> list[str | None]:
    return [
        (body.get("response_format") or {}).get("type") if body.get("response_format") else None
        for body in srv.chat.requests
    ]


async def test_structural_output_falls_back_to_json_object_and_remembers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with FakeOpenAIServer(reject_response_format=["json_schema"]) as srv:
        srv.chat.respond_with(lambda body: CITY_JSON)
        llm = make_llm(srv)
        extract = StructuralOutput(City).with_llm(llm)
        with caplog.at_level(logging.WARNING, logger="promptimus.structural"):
            first = await asyncio.wait_for(extract("Oslo?"), WAIT)
            second = await asyncio.wait_for(extract("Oslo again?"), WAIT)
        assert first == second == City(name="Oslo", population=709000)
        assert _formats(srv) == ["json_schema", "json_object", "json_object"]
        fallback = srv.chat.requests[1]
        assert fallback["response_format"]["schema"] == City.model_json_schema()
        assert any('"population"' in m["content"] for m in fallback["messages"][:2])
        assert llm.capabilities.response_format == "json_object"
    lines = [r.getMessage() for r in caplog.records if r.name == "promptimus.structural"]
    assert len(lines) == 1 and "fell back to json_object" in lines[0]


async def test_structural_output_falls_back_to_prompted_mode() -> None:
    rejection = ResponseFormatRejection({"json_schema", "json_object"}, 500, VALIDATION_BODY)
    with FakeOpenAIServer(reject_response_format=rejection) as srv:
        srv.chat.respond_with(lambda body: f"Here you go:\n```json\n{CITY_JSON}\n```")
        llm = make_llm(srv)
        extract = StructuralOutput(City, n_retries=0).with_llm(llm)
        assert await asyncio.wait_for(extract("Oslo?"), WAIT) == City(
            name="Oslo", population=709000
        )
        assert _formats(srv) == ["json_schema", "json_object", None]  # 3 requests, not 5 x 3
        prompted = srv.chat.requests[2]
        assert "response_format" not in prompted
        schema_text = json.dumps(City.model_json_schema(), indent=2)
        assert any(schema_text in m["content"] for m in prompted["messages"])
        assert llm.capabilities.response_format == "prompted"
        await asyncio.wait_for(extract("Oslo?"), WAIT)
        assert len(srv.chat.requests) == 4  # remembered: straight to prompted mode


async def test_a_rejection_that_is_not_about_the_format_is_raised(srv: FakeOpenAIServer) -> None:
    llm = make_llm(srv)
    extract = StructuralOutput(City).with_llm(llm)
    srv.chat.script(Fault.status(401))
    with pytest.raises(RequestRejected) as caught:
        await extract("x")
    assert caught.value.status == 401 and len(srv.chat.requests) == 1
    srv.chat.script(*[Fault.status(400)] * 3)
    with pytest.raises(RequestRejected):  # rejected in every mode: the request is the problem
        await extract("x")
    assert len(srv.chat.requests) == 4
    srv.chat.script(Fault.context_overflow())
    with pytest.raises(ContextWindowExceeded):
        await extract("x")
    assert len(srv.chat.requests) == 5
    assert llm.capabilities.response_format is None  # nothing learned from any of these


async def test_agent_structured_output_degrades_too() -> None:
    with FakeOpenAIServer(reject_response_format=["json_schema"]) as srv:
        srv.chat.respond_with(lambda body: CITY_JSON)
        llm = make_llm(srv)
        agent = OpenaiToolCallingAgent("You answer.", structural_output=City).with_llm(llm)
        assert await asyncio.wait_for(agent("Oslo?"), WAIT) == City(name="Oslo", population=709000)
        events = await drain(agent.stream("Oslo?"))
        assert events[-1].output == City(name="Oslo", population=709000)
        assert _formats(srv) == ["json_schema", "json_object", "json_object"]
        assert llm.capabilities.response_format == "json_object"

    with FakeOpenAIServer(reject_response_format=["json_schema", "json_object"]) as srv:
        srv.chat.respond_with(lambda body: CITY_JSON)
        llm = make_llm(srv)
        agent = OpenaiToolCallingAgent("You answer.", structural_output=City).with_llm(llm)
        events = await drain(agent.stream("Oslo?"))
        assert events[-1].output == City(name="Oslo", population=709000)
        assert _formats(srv) == ["json_schema", "json_object", None]
        assert len(events[-1].record.steps) == 1  # rejected requests are not steps


# --- reading error bodies -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message", "expected"),
    [
        ({"code": "context_length_exceeded", "message": "too long"}, "", (None, None)),
        (
            {"type": "exceed_context_size_error", "n_ctx": 2048, "n_prompt_tokens": 3000},
            "",
            (2048, 3000),
        ),
        (
            None,
            "This model's maximum context length is 8192 tokens. However, you requested "
            "9000 tokens (8000 in the messages, 1000 in the completion).",
            (8192, 9000),
        ),
        ("the input length exceeds the context length", "", (None, None)),
    ],
)
def test_context_overflow_is_recognized_in_every_dialect(
    body: Any, message: str, expected: tuple[int | None, int | None]
) -> None:
    from promptimus.transport.error_body import context_overflow

    found = context_overflow(body, message)
    assert found is not None
    assert (found.context_window, found.prompt_tokens) == expected


@pytest.mark.parametrize(
    "message",
    ["Rate limit reached for requests", "model 'x' not found", "server overloaded", ""],
)
def test_other_errors_are_not_taken_for_context_overflow(message: str) -> None:
    from promptimus.transport.error_body import context_overflow

    assert context_overflow({"message": message, "type": "server_error"}, message) is None


def test_request_error_bodies() -> None:
    from promptimus.transport.error_body import is_request_error_body

    assert is_request_error_body(VALIDATION_BODY)
    assert is_request_error_body({"error": {"type": "invalid_request_error", "message": "m"}})
    assert is_request_error_body({"object": "error", "type": "BadRequestError", "code": 400})
    assert not is_request_error_body({"error": {"type": "server_error", "message": "boom"}})
    assert not is_request_error_body({"error": {"code": 429, "message": "slow down"}})
    assert not is_request_error_body("<html>502 Bad Gateway</html>")
    assert not is_request_error_body(None)
