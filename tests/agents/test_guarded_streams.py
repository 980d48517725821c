"""What a guardrail holds back never reaches a stream: with output guardrails a step's text and
partial output wait for their verdict and arrive as they left it (allowed: as streamed;
replaced: the replacement; blocked: nothing), and with a parallel input guardrail the first
step's reply waits for the input check. Through the real SDK and the fake OpenAI server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import (
    FinalResult,
    PartialOutput,
    StepEnd,
    TextDelta,
    ToolCallEvent,
)
from promptimus.errors import GuardrailTripped, InvalidVerdict
from promptimus.guardrails import InputGuardrail, OutputGuardrail, Verdict
from promptimus.llms import OpenAILike
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def llm(srv: FakeOpenAIServer) -> OpenAILike:
    return OpenAILike("m", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)


async def collect(agent: Any, request: str) -> tuple[list[Any], BaseException | None]:
    """Every event of the stream, and the error that ended it (None: it finished)."""
    events: list[Any] = []
    with pm.Session():
        try:
            async for event in agent.stream(request):
                events.append(event)
        except Exception as exc:
            return events, exc
    return events, None


def streamed_text(events: list[Any]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def shown(events: list[Any]) -> str:
    """All a stream's consumer read, but the run record (kept for the program, not shown)."""
    return " ".join(repr(event) for event in events if not isinstance(event, FinalResult))


def refuse_secret(text: str) -> Verdict:
    return Verdict.block("a secret") if "hunter2" in text else Verdict.allow()


def redact_secret(text: str) -> Verdict:
    return Verdict.replace(text.replace("hunter2", "[redacted]"))


# --- output guardrails ------------------------------------------------------------------------


async def test_a_blocked_answer_never_streams(srv: FakeOpenAIServer) -> None:
    srv.chat.script("The password is hunter2.")
    agent = OpenaiToolCallingAgent(
        "Help.", [], guardrails=[OutputGuardrail(refuse_secret)]
    ).with_llm(llm(srv))
    events, error = await collect(agent, "password?")
    assert isinstance(error, GuardrailTripped)
    assert "hunter2" not in shown(events) and streamed_text(events) == ""


async def test_a_redacted_answer_streams_redacted(srv: FakeOpenAIServer) -> None:
    srv.chat.script("The password is hunter2, keep it safe.")
    agent = OpenaiToolCallingAgent(
        "Help.", [], guardrails=[OutputGuardrail(redact_secret)]
    ).with_llm(llm(srv))
    events, error = await collect(agent, "password?")
    assert error is None
    assert streamed_text(events) == "The password is [redacted], keep it safe."
    assert "hunter2" not in shown(events)
    ends = [event for event in events if isinstance(event, StepEnd)]
    assert ends[-1].message.content == "The password is [redacted], keep it safe."
    assert events[-1].output.content == "The password is [redacted], keep it safe."


async def test_an_allowed_answer_streams_as_its_pieces_after_its_verdict(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("All is well here.")
    agent = OpenaiToolCallingAgent(
        "Help.", [], guardrails=[OutputGuardrail(refuse_secret)]
    ).with_llm(llm(srv))
    events, error = await collect(agent, "how?")
    assert error is None
    assert streamed_text(events) == "All is well here."
    assert len([e for e in events if isinstance(e, TextDelta)]) > 1  # still in pieces
    kinds = [type(event).__name__ for event in events]
    assert kinds.index("GuardrailEvent") < kinds.index("TextDelta")


async def test_a_blocked_answer_sent_back_for_another_try_never_streams(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("It is hunter2.", "I cannot share it.")
    agent = OpenaiToolCallingAgent(
        "Help.", [], guardrails=[OutputGuardrail(refuse_secret, retry=1)]
    ).with_llm(llm(srv))
    events, error = await collect(agent, "password?")
    assert error is None
    assert streamed_text(events) == "I cannot share it."
    assert "hunter2" not in shown(events)


async def test_the_text_of_a_tool_step_streams_and_the_answer_waits(
    srv: FakeOpenAIServer,
) -> None:
    def lookup(name: str) -> str:
        """Look up a user's password."""
        return "hunter2"

    srv.chat.script(
        Reply(content="Let me look.", tool_calls=[ToolCall("lookup", {"name": "ann"})]),
        "Ann's password is hunter2.",
    )
    agent = OpenaiToolCallingAgent(
        "Help.", [lookup], guardrails=[OutputGuardrail(refuse_secret)]
    ).with_llm(llm(srv))
    events, error = await collect(agent, "ann's password?")
    assert isinstance(error, GuardrailTripped)
    assert streamed_text(events) == "Let me look."  # not an answer: no guardrail judges it
    kinds = [type(event).__name__ for event in events]
    assert kinds.index("TextDelta") < kinds.index("ToolCallEvent")
    assert "Ann's password" not in shown(events)
    assert [e.name for e in events if isinstance(e, ToolCallEvent)] == ["lookup"]


class Secret(BaseModel):
    owner: str
    password: str


async def test_a_blocked_structured_answer_shows_no_partial_output(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script('{"owner": "ann", "password": "hunter2"}')
    agent = OpenaiToolCallingAgent(
        "Help.", [], structural_output=Secret, guardrails=[OutputGuardrail(refuse_secret)]
    ).with_llm(llm(srv))
    events, error = await collect(agent, "ann's password?")
    assert isinstance(error, GuardrailTripped)
    assert not any(isinstance(event, PartialOutput) for event in events)
    assert "hunter2" not in shown(events) and "ann" not in streamed_text(events)


async def test_an_allowed_structured_answer_still_shows_its_partial_output(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script('{"owner": "ann", "password": "swordfish"}')
    agent = OpenaiToolCallingAgent(
        "Help.", [], structural_output=Secret, guardrails=[OutputGuardrail(refuse_secret)]
    ).with_llm(llm(srv))
    events, error = await collect(agent, "ann's password?")
    assert error is None
    partials = [event.output for event in events if isinstance(event, PartialOutput)]
    assert partials and partials[-1].owner == "ann"
    assert events[-1].output == Secret(owner="ann", password="swordfish")


async def test_a_replacement_without_text_fails_closed_on_the_stream(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("secret 4111")
    agent = OpenaiToolCallingAgent(
        "Help.", [], guardrails=[OutputGuardrail(lambda text: Verdict("replace"))]
    ).with_llm(llm(srv))
    events, error = await collect(agent, "hi")
    assert isinstance(error, InvalidVerdict)
    assert "4111" not in shown(events)


# --- a parallel input guardrail ----------------------------------------------------------------


def judged_after_the_reply(agent: Any, verdict: Verdict) -> Any:
    """A parallel check that decides only once the first reply has fully arrived."""
    replied = asyncio.Event()
    agent.predictor.prompt.register_forward_hook(lambda *args: replied.set())

    async def judge(text: str) -> Verdict:
        await replied.wait()
        return verdict

    return judge


async def test_the_reply_to_a_request_a_parallel_check_blocks_never_streams(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("Here is how to do the forbidden thing.")
    agent = OpenaiToolCallingAgent("Help.", []).with_llm(llm(srv))
    judge = judged_after_the_reply(agent, Verdict.block("forbidden"))
    agent.guardrails = pm.ModuleList([InputGuardrail(judge, parallel=True)])
    events, error = await collect(agent, "the forbidden thing")
    assert isinstance(error, GuardrailTripped) and len(srv.chat.requests) == 1
    assert streamed_text(events) == "" and "forbidden thing." not in shown(events)


async def test_the_reply_to_a_request_a_parallel_check_redacts_never_streams(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.script("You said hunter2.", "You said [redacted].")
    agent = OpenaiToolCallingAgent("Help.", []).with_llm(llm(srv))
    judge = judged_after_the_reply(agent, Verdict.replace("my [redacted]"))
    agent.guardrails = pm.ModuleList([InputGuardrail(judge, parallel=True)])
    events, error = await collect(agent, "my hunter2")
    assert error is None and len(srv.chat.requests) == 2
    assert streamed_text(events) == "You said [redacted]."
    assert "hunter2" not in shown(events)


async def test_the_reply_a_parallel_check_allows_streams_whole(srv: FakeOpenAIServer) -> None:
    srv.chat.script("Hello there, friend.")
    agent = OpenaiToolCallingAgent("Help.", []).with_llm(llm(srv))
    judge = judged_after_the_reply(agent, Verdict.allow())
    agent.guardrails = pm.ModuleList([InputGuardrail(judge, parallel=True)])
    events, error = await collect(agent, "hi")
    assert error is None
    assert streamed_text(events) == "Hello there, friend."
    kinds = [type(event).__name__ for event in events]
    assert kinds.index("GuardrailEvent") < kinds.index("TextDelta")
