"""Request options of the wrong shape are refused where they are given (the constructor for
``call_kwargs`` and client keywords, the call for per-call options), naming the option, before
any request: the fake server receives nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from promptimus.dto import Message, MessageRole
from promptimus.errors import InvalidArgument, UnknownRequestOption
from promptimus.llms import Anthropic, Gemini, aaccumulate
from promptimus.testing import FakeAnthropicServer, FakeGeminiServer
from promptimus.transport import RetryPolicy

REFUSED = (InvalidArgument, UnknownRequestOption)
NO_RETRY = RetryPolicy(max_retries=0)


def ask() -> list[Message]:
    return [Message(role=MessageRole.USER, content="hi")]


@pytest.fixture
def anthropic_srv() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as server:
        yield server


@pytest.fixture
def gemini_srv() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer() as server:
        yield server


ANTHROPIC_CALL_OPTIONS: list[tuple[str, Any]] = [
    ("tool_choice", "sometimes"),
    ("tool_choice", 5),
    ("tool_choice", {"type": "function", "function": "add"}),
    ("response_format", {"type": "json_schema"}),
    ("response_format", {"type": "json_schema", "json_schema": "a schema"}),
    ("response_format", {"type": "json_schema", "json_schema": {"schema": "x"}}),
    ("tools", "add"),
    ("tools", [5]),
    ("tools", [{"type": "function", "function": {"description": "no name"}}]),
    ("extra_body", "x"),
    ("extra_body", ["a"]),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("option", "value"), ANTHROPIC_CALL_OPTIONS)
async def test_anthropic_refuses_a_wrong_shaped_call_option_before_sending(
    anthropic_srv: FakeAnthropicServer, option: str, value: Any, stream: bool
) -> None:
    srv = anthropic_srv
    llm = Anthropic("claude-test", api_key=srv.api_key, base_url=srv.base_url, retry=NO_RETRY)
    with pytest.raises(REFUSED) as info:
        if stream:
            await aaccumulate(llm.astream(ask(), **{option: value}))
        else:
            await llm.achat(ask(), **{option: value})
    assert option in str(info.value)
    assert len(srv.messages.requests) == 0


@pytest.mark.parametrize(
    ("call_kwargs", "named"),
    [
        ("temperature=0", "call_kwargs"),
        ([("temperature", 0)], "call_kwargs"),
        ({1: 0}, "call_kwargs"),
        ({"tool_choice": 5}, "tool_choice"),
        ({"tools": "add"}, "tools"),
        ({"temprature": 0}, "temprature"),
    ],
)
def test_anthropic_refuses_wrong_call_kwargs_in_the_constructor(
    call_kwargs: Any, named: str
) -> None:
    with pytest.raises(REFUSED) as info:
        Anthropic("claude-test", api_key="k", call_kwargs=call_kwargs)
    assert named in str(info.value)


def test_anthropic_refuses_an_unknown_client_keyword_in_the_constructor() -> None:
    with pytest.raises(UnknownRequestOption, match="max_retry"):
        Anthropic("claude-test", api_key="k", max_retry=3)


def test_anthropic_takes_the_clients_own_keywords() -> None:
    llm = Anthropic("claude-test", api_key="k", default_headers={"x-team": "a"})
    assert llm.model_name == "claude-test"


GEMINI_CALL_OPTIONS: list[tuple[str, Any]] = [
    ("stop", 5),
    ("stop", [1, 2]),
    ("response_format", {"type": "json_schema", "json_schema": "a schema"}),
    ("response_format", "json"),
    ("extra_body", "x"),
    ("extra_body", [("a", 1)]),
    ("generation_config", "x"),
    ("generation_config", 5),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("option", "value"), GEMINI_CALL_OPTIONS)
async def test_gemini_refuses_a_wrong_shaped_call_option_before_sending(
    gemini_srv: FakeGeminiServer, option: str, value: Any, stream: bool
) -> None:
    srv = gemini_srv
    llm = Gemini("gemini-3-pro", api_key=srv.api_key, base_url=srv.base_url, retry=NO_RETRY)
    with pytest.raises(REFUSED) as info:
        if stream:
            await aaccumulate(llm.astream(ask(), **{option: value}))
        else:
            await llm.achat(ask(), **{option: value})
    assert option in str(info.value)
    assert len(srv.generate.requests) == 0


@pytest.mark.parametrize(
    ("call_kwargs", "named"),
    [
        ("temperature=0", "call_kwargs"),
        ({1: 0}, "call_kwargs"),
        ({"stop": 5}, "stop"),
        ({"generation_config": "x"}, "generation_config"),
        ({"temprature": 0}, "temprature"),
    ],
)
def test_gemini_refuses_wrong_call_kwargs_in_the_constructor(call_kwargs: Any, named: str) -> None:
    with pytest.raises(REFUSED) as info:
        Gemini("gemini-3-pro", api_key="k", call_kwargs=call_kwargs)
    assert named in str(info.value)
