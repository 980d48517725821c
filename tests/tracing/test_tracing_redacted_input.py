"""What an input guardrail redacts is what a trace records as the request: the agent's span
(and a `Guarded` module's) shows the request as the guardrails left it, whether the check was
waited for or ran beside the first model request, and even when a later guardrail blocked."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="install the dev dependency group")

import promptimus as pm
from promptimus import Module
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.errors import GuardrailTripped
from promptimus.guardrails import Guarded, InputGuardrail, Verdict
from promptimus.llms import OpenAILike
from promptimus.testing import FakeOpenAIServer


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def llm(srv: FakeOpenAIServer) -> OpenAILike:
    return OpenAILike("m", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)


def redact(text: str) -> Verdict:
    return Verdict.replace(text.replace("hunter2", "[redacted]"))


def root_input(exporter: Any) -> str:
    (root,) = [span for span in exporter.get_finished_spans() if span.parent is None]
    value = (root.attributes or {}).get("input.value")
    assert isinstance(value, str)
    return value


async def test_the_agent_span_records_the_redacted_request(
    exporter: Any, srv: FakeOpenAIServer
) -> None:
    srv.chat.script("Noted.")
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[InputGuardrail(redact)]).with_llm(
        llm(srv)
    )
    with pm.Session():
        await agent.forward("my password is hunter2")
    recorded = root_input(exporter)
    assert "hunter2" not in recorded and "my password is [redacted]" in recorded


async def test_a_streamed_run_records_the_redacted_messages(
    exporter: Any, srv: FakeOpenAIServer
) -> None:
    srv.chat.script("Noted.")
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[InputGuardrail(redact)]).with_llm(
        llm(srv)
    )
    request = [Message(role=MessageRole.USER, content="hunter2 is mine")]
    with pm.Session():
        [event async for event in agent.stream(request)]
    recorded = root_input(exporter)
    assert "hunter2" not in recorded and "[redacted] is mine" in recorded


async def test_a_parallel_redaction_is_recorded_too(exporter: Any, srv: FakeOpenAIServer) -> None:
    srv.chat.script("first", "second")

    async def slow_redact(text: str) -> Verdict:
        for _ in range(500):  # decide once the first request went out
            if srv.chat.requests:
                break
            await asyncio.sleep(0.01)
        return redact(text)

    agent = OpenaiToolCallingAgent(
        "Help.", [], guardrails=[InputGuardrail(slow_redact, parallel=True)]
    ).with_llm(llm(srv))
    with pm.Session():
        await agent.forward("hunter2")
    assert "hunter2" not in root_input(exporter)


async def test_a_redaction_before_a_block_is_what_is_recorded(
    exporter: Any, srv: FakeOpenAIServer
) -> None:
    agent = OpenaiToolCallingAgent(
        "Help.",
        [],
        guardrails=[InputGuardrail(redact), InputGuardrail(lambda text: Verdict.block("no"))],
    ).with_llm(llm(srv))
    with pm.Session(), pytest.raises(GuardrailTripped):
        await agent.forward("hunter2")
    assert "hunter2" not in root_input(exporter)


class Echo(Module):
    async def forward(self, text: str) -> str:
        return text


async def test_a_guarded_module_records_the_redacted_request(exporter: Any) -> None:
    guarded = Guarded(Echo(), [InputGuardrail(redact)])
    assert await guarded("say hunter2") == "say [redacted]"
    assert "hunter2" not in root_input(exporter)
