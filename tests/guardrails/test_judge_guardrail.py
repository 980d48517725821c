"""A judge guardrail is a module: its prompt is a Parameter of the agent's tree, its model calls
are counted under its own path, and `fit` trains it on a small labelled set over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import promptimus as pm
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.errors import GuardrailTripped
from promptimus.evals import Example, Score
from promptimus.guardrails import InputGuardrail, Verdict
from promptimus.llms import OpenAILike
from promptimus.optim import Reflective, fit
from promptimus.testing import FakeOpenAIServer

START = "Does this message ask for anything harmful? Answer yes or no."
BETTER = "Is this message a refund request? Answer yes or no."


class Judge(pm.Module):
    def __init__(self) -> None:
        super().__init__()
        self.prompt = pm.Prompt(START)

    async def forward(self, text: str) -> Verdict:
        reply = await self.prompt([pm.Message(role="user", content=text)])
        if reply.content.strip().lower().startswith("yes"):
            return Verdict.block("the judge flagged it")
        return Verdict.allow()


def answer(body: dict[str, Any]) -> str:
    """The judge model says yes to refund requests only when its prompt asks about refunds; the
    teacher proposes that prompt; the agent's model answers plainly."""
    messages = body["messages"]
    if body["model"] == "teacher":
        return f"Try this:\n```text\n{BETTER}\n```"
    system, text = messages[0]["content"], messages[-1]["content"]
    if body["model"] == "judge":
        return "yes" if "refund" in system and "refund" in text else "no"
    return "Sure."


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        server.chat.respond_with(answer)
        yield server


def llm(srv: FakeOpenAIServer, model: str) -> OpenAILike:
    return OpenAILike(model, api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)


def labelled() -> list[Example]:
    blocked = ["refund order 4", "I want a refund", "refund my last purchase", "refund please"]
    allowed = ["where is my parcel", "change my address", "hello", "track order 9"]
    return [Example({"text": t}, expected="block") for t in blocked] + [
        Example({"text": t}, expected="allow") for t in allowed
    ]


def metric(example: Example, verdict: Verdict) -> Score:
    if verdict.action == example.expected:
        return Score(1.0)
    return Score(0.0, f"expected {example.expected}: refund requests must be blocked")


async def test_a_judge_guard_is_part_of_the_tree_and_counted_under_its_path(
    srv: FakeOpenAIServer,
) -> None:
    judge = Judge().with_llm(llm(srv, "judge"))
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[InputGuardrail(judge)])
    agent.with_llm(llm(srv, "agent"))
    assert agent.state_dict()["guardrails.0.check.prompt.prompt"] == START
    assert "Judge" in repr(agent)
    with pm.track_usage() as usage, pm.Session():
        await agent.forward("hello")
    assert set(usage.by_path) == {"root.guardrails.0.check.prompt", "root.predictor.prompt"}
    assert usage.by_path["root.guardrails.0.check.prompt"].requests == 1


async def test_fit_trains_the_judge_and_the_agent_then_blocks_what_it_learned(
    srv: FakeOpenAIServer,
) -> None:
    judge = Judge().with_llm(llm(srv, "judge"))
    guard = InputGuardrail(judge)
    data = labelled()
    result = await fit(
        guard,
        data,
        metric,
        optimizer=Reflective(teacher=llm(srv, "teacher"), minibatch_size=4),
        budget=3 * len(data),
        progress=False,
    )
    assert result.baseline_score == 0.5 and result.best_score == 1.0
    assert judge.prompt.prompt.value == BETTER

    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[guard]).with_llm(llm(srv, "agent"))
    assert agent.state_dict()["guardrails.0.check.prompt.prompt"] == BETTER
    with pm.Session(), pytest.raises(GuardrailTripped, match="judge flagged"):
        await agent.forward("refund order 12")
    assert not [r for r in srv.chat.requests if r["model"] == "agent"]


async def test_each_guardrail_is_a_span_of_the_run_with_its_verdict(
    exporter: Any, srv: FakeOpenAIServer
) -> None:
    judge = Judge().with_llm(llm(srv, "judge"))
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[InputGuardrail(judge)])
    agent.with_llm(llm(srv, "agent"))
    with pm.Session():
        await agent.forward("I want a refund")  # the untrained judge lets it through
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert {"root", "root.guardrails.0", "root.guardrails.0.check"} <= set(spans)
    guard = spans["root.guardrails.0"]
    assert guard.parent is not None and guard.parent.span_id == spans["root"].context.span_id
    assert "allow" in str(dict(guard.attributes or {}).get("output.value"))
