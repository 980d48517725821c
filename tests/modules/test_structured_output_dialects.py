"""Servers that reject `response_format` in their own words: llama-cpp-python's 500 that wraps a
request-validation report, FastAPI's `detail` list, pydantic's report, OpenAI's and vLLM's 400s.
Each is a rejection of the request (sent once, never retried), and StructuralOutput degrades
through it in at most 2 requests the first time and 1 later, remembered per provider. Every
test counts the requests the fake server saw."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from promptimus.dto import Message, MessageRole
from promptimus.errors import RequestRejected
from promptimus.llms import OpenAILike
from promptimus.modules import StructuralOutput
from promptimus.testing import (
    REJECTION_DIALECTS,
    FakeOpenAIServer,
    Fault,
    ResponseFormatRejection,
)
from promptimus.transport import RetryPolicy

WAIT = 30.0

# What llama-cpp-python 0.3.36's server answered (HTTP 500) to `response_format: json_schema`,
# byte for byte (its traceback path shortened to `...`).
LLAMA_CPP_PYTHON_500 = (
    r"""{"error":{"message":"1 validation error:\n  {'type': 'literal_error', 'loc': ('body', """
    r"""'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", """
    r"""'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File """
    r"""\".../llama_cpp/server/app.py\", line 376, in create_chat_completion\n    POST """
    r"""/v1/chat/completions","type":"internal_server_error","param":null,"code":null}}"""
)


class City(BaseModel):
    name: str
    population: int


CITY_JSON = '{"name": "Oslo", "population": 709000}'


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def make_llm(srv: FakeOpenAIServer) -> OpenAILike:
    retry = RetryPolicy(max_retries=4, base_delay=0.001, max_delay=0.01)
    return OpenAILike("fake-model", api_key=srv.api_key, base_url=srv.base_url, retry=retry)


def formats(srv: FakeOpenAIServer) -> list[str | None]:
    return [(body.get("response_format") or {}).get("type") for body in srv.chat.requests]


async def test_the_llama_cpp_python_500_is_a_rejection_sent_once(srv: FakeOpenAIServer) -> None:
    srv.chat.script(Fault.status(500, body=json.loads(LLAMA_CPP_PYTHON_500)), "never")
    llm = make_llm(srv)
    with pytest.raises(RequestRejected) as caught:
        await asyncio.wait_for(llm.achat([Message(role=MessageRole.USER, content="x")]), WAIT)
    assert len(srv.chat.requests) == 1  # not 5: the same request would fail the same way
    assert caught.value.status == 500
    assert "Input should be 'text' or 'json_object'" in caught.value.server_message
    assert caught.value.rejected_fields == ("response_format.type",)
    assert srv.chat.pending == 1  # the scripted reply was never asked for


def test_the_fault_sends_the_llama_cpp_python_body_verbatim() -> None:
    status, body = Fault.request_rejected().status_code, Fault.request_rejected().body
    assert status == 500
    assert body == json.loads(LLAMA_CPP_PYTHON_500)
    rejection = ResponseFormatRejection.dialect("llama-cpp-python")
    assert (rejection.status, rejection.body, rejection.types) == (
        500,
        json.loads(LLAMA_CPP_PYTHON_500),
        frozenset({"json_schema"}),
    )


async def test_structured_output_through_the_llama_cpp_python_500() -> None:
    rejection = ResponseFormatRejection.dialect("llama-cpp-python")
    with FakeOpenAIServer(reject_response_format=rejection) as srv:
        srv.chat.respond_with(lambda body: CITY_JSON)
        llm = make_llm(srv)
        extract = StructuralOutput(City).with_llm(llm)
        assert await asyncio.wait_for(extract("Oslo?"), WAIT) == City(
            name="Oslo", population=709000
        )
        assert formats(srv) == ["json_schema", "json_object"]  # 2 requests the first time
        assert srv.chat.requests[1]["response_format"]["schema"] == City.model_json_schema()
        await asyncio.wait_for(extract("Oslo again?"), WAIT)
        await asyncio.wait_for(extract("And again?"), WAIT)
        assert formats(srv) == ["json_schema", "json_object", "json_object", "json_object"]

        other = make_llm(srv)  # another provider learns for itself
        await asyncio.wait_for(StructuralOutput(City).with_llm(other)("Oslo?"), WAIT)
        assert formats(srv)[4:] == ["json_schema", "json_object"]
        assert llm.capabilities.response_format == other.capabilities.response_format


@pytest.mark.parametrize("dialect", REJECTION_DIALECTS)
async def test_every_dialect_is_sent_once_and_names_the_field(
    srv: FakeOpenAIServer, dialect: str
) -> None:
    srv.chat.script(Fault.request_rejected(dialect), "never")  # type: ignore[arg-type]
    with pytest.raises(RequestRejected) as caught:
        await make_llm(srv).achat([Message(role=MessageRole.USER, content="x")])
    assert len(srv.chat.requests) == 1
    assert any(f.startswith("response_format") for f in caught.value.rejected_fields) or (
        dialect == "ollama"  # a plain sentence names no field
    )


@pytest.mark.parametrize("dialect", REJECTION_DIALECTS)
async def test_structured_output_degrades_in_every_dialect(dialect: str) -> None:
    rejection = ResponseFormatRejection.dialect(dialect, {"json_schema", "json_object"})  # type: ignore[arg-type]
    with FakeOpenAIServer(reject_response_format=rejection) as srv:
        srv.chat.respond_with(lambda body: CITY_JSON)
        llm = make_llm(srv)
        extract = StructuralOutput(City, n_retries=0).with_llm(llm)
        await asyncio.wait_for(extract("Oslo?"), WAIT)
        await asyncio.wait_for(extract("Oslo?"), WAIT)
    assert formats(srv) == ["json_schema", "json_object", None, None]
    assert llm.capabilities.response_format == "prompted"


@pytest.mark.parametrize("dialect", ["llama-cpp-python", "fastapi", "pydantic", "openai"])
async def test_a_rejection_of_another_field_is_raised_without_falling_back(
    srv: FakeOpenAIServer, dialect: str
) -> None:
    srv.chat.script(Fault.request_rejected(dialect, field="messages.0.content"))  # type: ignore[arg-type]
    llm = make_llm(srv)
    with pytest.raises(RequestRejected) as caught:
        await asyncio.wait_for(StructuralOutput(City).with_llm(llm)("Oslo?"), WAIT)
    assert caught.value.rejected_fields == ("messages.0.content",)
    assert len(srv.chat.requests) == 1  # dropping response_format cannot help
    assert llm.capabilities.response_format is None


@pytest.mark.parametrize(
    ("body", "message", "fields"),
    [
        (json.loads(LLAMA_CPP_PYTHON_500)["error"], "", ("response_format.type",)),
        (
            {"detail": [{"loc": ["body", "response_format", "type"], "msg": "bad", "type": "x"}]},
            "",
            ("response_format.type",),
        ),
        (
            {"message": "bad", "type": "invalid_request_error", "param": "response_format"},
            "",
            ("response_format",),
        ),
        (
            None,
            "2 validation errors for ChatCompletionRequest\nresponse_format.type\n  Input "
            "should be 'text' [type=literal_error]\nmessages.1.role\n  Field required "
            "[type=missing]",
            ("response_format.type", "messages.1.role"),
        ),
    ],
)
def test_the_rejected_fields_are_read_from_each_report(
    body: object, message: str, fields: tuple[str, ...]
) -> None:
    from promptimus.transport.error_body import is_request_error_body, rejected_fields

    assert rejected_fields(body, message) == fields
    assert is_request_error_body(body, message)


@pytest.mark.parametrize(
    "message",
    [
        "internal error: validation of the model weights failed",
        "CUDA error: out of memory",
        "1 validation error happened somewhere, retry",
    ],
)
async def test_a_server_error_that_is_no_request_report_is_still_retried(
    srv: FakeOpenAIServer, message: str
) -> None:
    body = {"error": {"message": message, "type": "internal_server_error"}}
    srv.chat.script(Fault.status(500, body=body), "fine")
    reply = await make_llm(srv).achat([Message(role=MessageRole.USER, content="x")])
    assert reply.content == "fine"
    assert len(srv.chat.requests) == 2
