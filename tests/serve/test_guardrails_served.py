"""Guardrails through the served OpenAI-compatible face, driven by the `openai` SDK through a
real uvicorn server: what an output guardrail holds back never reaches the plain reply nor any
streamed chunk, and an input guardrail's block is a clear 400, not a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from serve_support import Running, serving

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import Message
from promptimus.guardrails import InputGuardrail, OutputGuardrail, Verdict
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app

SECRET = "the vault code is 4417"


def leaky(history: list[Message], kwargs: dict[str, Any]) -> str:
    return f"Sure: {SECRET}, and have a nice day."


def redact(text: str) -> Verdict:
    return Verdict.replace(text.replace("4417", "[redacted]"))


def refuse_codes(text: str) -> Verdict:
    return Verdict.block("no codes") if "code" in text else Verdict.allow()


def no_passwords(text: str) -> Verdict:
    return Verdict.block("asks for a password") if "password" in text else Verdict.allow()


def served(*guardrails: Any) -> Iterator[Running]:
    agent = OpenaiToolCallingAgent("You answer.", guardrails=list(guardrails))
    agent.with_llm(ScriptedLLM(leaky))
    with serving(app(agent)) as running:
        yield running


def sdk(running: Running) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{running.url}/v1", api_key="unused", max_retries=0)


def ask(running: Running, text: str) -> str:
    reply = sdk(running).chat.completions.create(
        model="x", messages=[{"role": "user", "content": text}]
    )
    return reply.choices[0].message.content or ""


def raw_stream(running: Running, text: str) -> str:
    """Every byte the server streamed, read past the SDK."""
    body = {"messages": [{"role": "user", "content": text}], "stream": True}
    with httpx.stream(
        "POST", f"{running.url}/v1/chat/completions", json=body, timeout=60
    ) as answer:
        return "".join(answer.iter_text())


@pytest.fixture
def redacting() -> Iterator[Running]:
    yield from served(OutputGuardrail(redact))


@pytest.fixture
def blocking() -> Iterator[Running]:
    yield from served(OutputGuardrail(refuse_codes))


def test_a_replaced_answer_is_all_the_plain_reply_carries(redacting: Running) -> None:
    assert ask(redacting, "code?") == "Sure: the vault code is [redacted], and have a nice day."


def test_a_replaced_answer_is_all_the_stream_carries(redacting: Running) -> None:
    chunks = sdk(redacting).chat.completions.create(
        model="x", messages=[{"role": "user", "content": "code?"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Sure: the vault code is [redacted], and have a nice day."
    assert "4417" not in raw_stream(redacting, "code?")


def test_a_blocked_answer_reaches_neither_reply(blocking: Running) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        ask(blocking, "code?")
    assert refused.value.body["code"] == "guardrail_blocked"  # type: ignore[index]
    assert "4417" not in str(refused.value.body)
    streamed = raw_stream(blocking, "code?")
    assert "guardrail_blocked" in streamed
    assert "4417" not in streamed and "vault" not in streamed
    assert "[DONE]" not in streamed
    with pytest.raises(openai.APIError):
        list(
            sdk(blocking).chat.completions.create(
                model="x", messages=[{"role": "user", "content": "code?"}], stream=True
            )
        )


@pytest.fixture
def guarded_input() -> Iterator[Running]:
    yield from served(InputGuardrail(no_passwords))


@pytest.mark.parametrize("stream", [False, True])
def test_an_input_block_is_a_clear_400(guarded_input: Running, stream: bool) -> None:
    body = {"messages": [{"role": "user", "content": "my password is x"}], "stream": stream}
    answer = httpx.post(f"{guarded_input.url}/v1/chat/completions", json=body, timeout=60)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "guardrail_blocked"
    assert "no_passwords" in error["message"] and "asks for a password" in error["message"]
    assert "Traceback" not in answer.text
    assert ask(guarded_input, "hello") == f"Sure: {SECRET}, and have a nice day."
