"""StructuralOutput: schemas (strict where possible), lenient parsing, retries, truncation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from promptimus.dto import Message, MessageRole
from promptimus.errors import FailedToParseOutput, InvalidArgument, OutputTruncated
from promptimus.llms import OpenAILike, ScriptedLLM
from promptimus.modules.structural import StructuralOutput, openai_response_format
from promptimus.testing import FakeOpenAIServer, Reply
from promptimus.transport import RetryPolicy


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)
    address: Address


class WithDefault(BaseModel):
    name: str
    nickname: str = "none"


class WithDict(BaseModel):
    scores: dict[str, int]


def test_strict_when_every_object_is_closed_and_fully_required() -> None:
    fmt = openai_response_format(Person)
    assert fmt["type"] == "json_schema"
    spec = fmt["json_schema"]
    assert spec["name"] == "Person" and spec["strict"] is True
    assert spec["schema"]["additionalProperties"] is False
    assert spec["schema"]["$defs"]["Address"]["additionalProperties"] is False
    assert "additionalProperties" not in Person.model_json_schema()  # the model's is untouched


@pytest.mark.parametrize("model", [WithDefault, WithDict])
def test_not_strict_when_the_schema_cannot_be(model: type[BaseModel]) -> None:
    assert openai_response_format(model)["json_schema"]["strict"] is False


def test_schema_name_is_sanitized() -> None:
    class Generic_(BaseModel):
        x: int

    Generic_.__name__ = "Box[int] result"
    assert openai_response_format(Generic_)["json_schema"]["name"] == "Box_int__result"


@pytest.mark.parametrize(
    "text",
    [
        '{"street": "Main", "city": "Oslo"}',
        '```json\n{"street": "Main", "city": "Oslo"}\n```',
        '```\n{"street": "Main", "city": "Oslo"}\n```',
        'Here you go: {"street": "Main", "city": "Oslo"} Hope it helps!',
        '  \n{"street": "Main",\n "city": "Oslo"}\n',
    ],
)
def test_parse_accepts_fenced_and_surrounded_json(text: str) -> None:
    assert StructuralOutput(Address).parse(text) == Address(street="Main", city="Oslo")


def test_parse_error_is_short_and_names_the_fields() -> None:
    with pytest.raises(FailedToParseOutput) as info:
        StructuralOutput(Person).parse('{"name": "Ann", "age": -1}')
    error = info.value.errors[0]
    assert "age" in error and "address" in error
    assert "https://" not in error


def test_parse_without_json_says_so() -> None:
    with pytest.raises(FailedToParseOutput, match="no JSON"):
        StructuralOutput(Address).parse("I do not know.")


async def test_native_request_and_success() -> None:
    llm = ScriptedLLM(['{"street": "Main", "city": "Oslo"}'])
    extract = StructuralOutput(Address).with_llm(llm)
    assert await extract("Main street, Oslo") == Address(street="Main", city="Oslo")
    sent, kwargs = llm.requests[0]
    assert kwargs["response_format"]["json_schema"]["name"] == "Address"
    assert sent[0].role == MessageRole.SYSTEM and sent[1].content == "Main street, Oslo"


async def test_retry_then_success_sends_the_error_back() -> None:
    llm = ScriptedLLM(['{"street": "Main"}', '{"street": "Main", "city": "Oslo"}'])
    extract = StructuralOutput(Address, retry_message_role="user").with_llm(llm)

    assert await extract("Main street, Oslo") == Address(street="Main", city="Oslo")

    second = llm.requests[1][0]
    assert second[-2] == Message(
        role=MessageRole.ASSISTANT,
        content='{"street": "Main"}',
        finish_reason="stop",
        usage=second[-2].usage,
        model_name="scripted",
    )
    assert second[-1].role == MessageRole.USER and "city" in second[-1].content


async def test_retries_exhausted_keeps_every_reply_and_error() -> None:
    llm = ScriptedLLM(["no", "still no", "{}"])
    extract = StructuralOutput(Address, n_retries=2).with_llm(llm)
    with pytest.raises(FailedToParseOutput) as info:
        await extract("x")
    assert info.value.raw == ["no", "still no", "{}"]
    assert len(info.value.errors) == 3 and "street" in info.value.errors[2]
    assert "n_retries" in str(info.value)


async def test_zero_retries_means_one_attempt() -> None:
    llm = ScriptedLLM(["no"])
    with pytest.raises(FailedToParseOutput):
        await StructuralOutput(Address, n_retries=0).with_llm(llm)("x")
    assert len(llm.requests) == 1


async def test_truncated_reply_raises_without_retrying() -> None:
    cut = Message(role=MessageRole.ASSISTANT, content='{"street": "Ma', finish_reason="length")
    llm = ScriptedLLM([cut, '{"street": "Main", "city": "Oslo"}'])
    with pytest.raises(OutputTruncated, match="max_tokens"):
        await StructuralOutput(Address).with_llm(llm)("x")
    assert len(llm.requests) == 1


async def test_prompted_mode_puts_schema_in_system_prompt() -> None:
    llm = ScriptedLLM(['Sure: {"street": "Main", "city": "Oslo"}'])
    extract = StructuralOutput(Address, native=False).with_llm(llm)
    assert await extract("x") == Address(street="Main", city="Oslo")
    sent, kwargs = llm.requests[0]
    assert kwargs == {}
    assert '"street"' in sent[0].content and '"city"' in sent[0].content


async def test_custom_templates_and_prompt_vars() -> None:
    llm = ScriptedLLM(["{}", '{"street": "Main", "city": "Oslo"}'])
    extract = StructuralOutput(
        Address,
        system_prompt="Extract an address in {lang}.",
        retry_template="Fix: {error_message}",
    ).with_llm(llm)
    await extract("x", lang="Norwegian")
    assert llm.requests[0][0][0].content == "Extract an address in Norwegian."
    assert llm.requests[1][0][-1].content.startswith("Fix: - street")


def test_invalid_arguments() -> None:
    with pytest.raises(InvalidArgument):
        StructuralOutput(dict)  # type: ignore[type-var]
    with pytest.raises(InvalidArgument):
        StructuralOutput(Address, n_retries=-1)


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    extract = StructuralOutput(Address, native=False)
    extract.retry_template.value = "Try again: {error_message}\n"
    extract.predictor.prompt.value = "JSON please:\n{schema_description}"
    extract.save(tmp_path / "s.toml")
    fresh = StructuralOutput(Address, native=False).load(tmp_path / "s.toml")
    assert fresh.retry_template.value == "Try again: {error_message}\n"
    assert fresh.predictor.prompt.value == "JSON please:\n{schema_description}"
    assert fresh.digest() == extract.digest()


async def test_over_http_with_the_real_sdk() -> None:
    with FakeOpenAIServer() as srv:
        srv.chat.script(
            Reply(content='```json\n{"street": "Main"}\n```'),
            Reply(content='{"street": "Main", "city": "Oslo"}'),
        )
        llm = OpenAILike(
            "fake-model",
            api_key=srv.api_key,
            base_url=srv.base_url,
            retry=RetryPolicy(max_retries=1, base_delay=0.001),
            timeout=5.0,
        )
        result = await StructuralOutput(Address).with_llm(llm)("x")
        bodies: list[dict[str, Any]] = srv.chat.requests
    assert result == Address(street="Main", city="Oslo")
    assert bodies[0]["response_format"]["json_schema"]["strict"] is True
    assert [m["role"] for m in bodies[1]["messages"]] == ["system", "user", "assistant", "user"]
    assert llm.request_count == 2
