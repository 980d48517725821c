"""What an output guardrail blocks or redacts reaches no stream and no body, on every path of
both served faces through a real uvicorn server: the OpenAI SSE stream, a nested agent's text
in the AG-UI stream, and a run resumed after an approval."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from ag_ui.core import RunFinishedEvent, RunFinishedInterruptOutcome
from ag_ui_client import post, run_input, user
from serve_support import serving

from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.guardrails import OutputGuardrail, Verdict
from promptimus.llms.scripted import ScriptedLLM
from promptimus.serve import app
from promptimus.tools import Tool

S = ScriptedLLM
SECRET = "hunter2"


def refuse_secret(text: str) -> Verdict:
    return Verdict.block("a secret") if SECRET in text else Verdict.allow()


def redact_secret(text: str) -> Verdict:
    return Verdict.replace(text.replace(SECRET, "[redacted]"))


GUARDS = [refuse_secret, redact_secret]


@pytest.mark.parametrize("guard", GUARDS)
def test_the_openai_stream_never_carries_what_a_guardrail_holds_back(guard: Any) -> None:
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[OutputGuardrail(guard)])
    agent.with_llm(S(lambda history, kwargs: f"The password is {SECRET}, keep it."))
    with serving(app(agent)) as running:
        reply = httpx.post(
            f"{running.url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "pw?"}], "stream": True},
            timeout=60.0,
        )
        sdk = openai.OpenAI(base_url=f"{running.url}/v1", api_key="unused", max_retries=0)
        plain = httpx.post(
            f"{running.url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "pw?"}]},
            timeout=60.0,
        )
        if guard is redact_secret:
            stream = sdk.chat.completions.create(
                model="x", messages=[{"role": "user", "content": "pw?"}], stream=True
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            assert text == "The password is [redacted], keep it."
    assert SECRET not in reply.text and SECRET not in plain.text
    if guard is refuse_secret:
        assert "guardrail_blocked" in reply.text and plain.status_code == 400


@pytest.mark.parametrize("guard", GUARDS)
def test_a_nested_agents_held_back_text_never_reaches_the_ag_ui_stream(guard: Any) -> None:
    inner = OpenaiToolCallingAgent("You know.", [], guardrails=[OutputGuardrail(guard)])
    inner.with_llm(S([f"It is {SECRET}."]))
    outer = OpenaiToolCallingAgent("You ask.", [Tool.from_module(inner, name="keeper")])
    outer.with_llm(S([S.tool_call("keeper", {"request": "pw?"}, id="k1"), "I asked."]))
    with serving(app(outer)) as running:
        answer = post(running.url, run_input("n", user("ask the keeper")))
    shown = " ".join(event.model_dump_json() for event in answer.events)
    assert SECRET not in shown
    if guard is redact_secret:
        assert answer.types()[-1] == "RUN_FINISHED"


@pytest.mark.parametrize("guard", GUARDS)
def test_a_run_resumed_after_approval_never_streams_what_a_guardrail_holds_back(
    guard: Any,
) -> None:
    def open_safe() -> str:
        """Opens the safe."""
        return "opened"

    llm = S([S.tool_call("open_safe", {}, id="s1"), f"The code was {SECRET}."])
    agent = OpenaiToolCallingAgent(
        "You open safes.",
        [Tool(open_safe, requires_approval=True)],
        guardrails=[OutputGuardrail(guard)],
    ).with_llm(llm)
    with serving(app(agent)) as running:
        first = post(running.url, run_input("r", user("open it")))
        outcome = first.of(RunFinishedEvent)[0].outcome
        assert isinstance(outcome, RunFinishedInterruptOutcome)
        resume = [{"interruptId": outcome.interrupts[0].id, "status": "resolved", "payload": True}]
        second = post(running.url, run_input("r", user("open it"), resume=resume))
    shown = " ".join(event.model_dump_json() for event in second.events)
    assert SECRET not in shown
    if guard is redact_secret:
        assert second.text() == "The code was [redacted]."
    else:
        assert second.types()[-1] == "RUN_ERROR"
