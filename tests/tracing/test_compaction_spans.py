"""A compaction in an agent run is a span of its own, under the run's, with its numbers as an
event and the summary's model call inside it; a step that needs none adds no span."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.llms import ScriptedLLM
from promptimus.modules import Compactor, Summarize


def reply(history: list[Message], kwargs: dict[str, Any]) -> str:
    return "the summary" if "tools" not in kwargs else "an answer " * 30


def clock() -> str:
    """The time."""
    return "noon"


async def test_a_compaction_is_a_span_with_its_numbers(exporter: InMemorySpanExporter) -> None:
    compactor = Compactor(Summarize(), trigger_tokens=80, keep_last=1)
    agent = OpenaiToolCallingAgent("You answer.", [clock], compactor=compactor)
    agent.with_llm(ScriptedLLM(reply))
    for n in range(3):
        await agent(f"question {n}")

    spans = exporter.get_finished_spans()
    compactions = [s for s in spans if s.name == "root.predictor.compactor"]
    assert len(compactions) == 1  # the third turn: the first two stayed under the trigger
    span = compactions[0]
    assert span.parent is not None
    (event,) = [e for e in span.events if e.name == "compaction"]
    numbers = dict(event.attributes or {})
    assert numbers["steps"] == "summarize"
    assert int(numbers["tokens_after"]) < int(numbers["tokens_before"])  # type: ignore[call-overload]
    assert int(numbers["summary_tokens"]) > 0  # type: ignore[call-overload]
    (step,) = [s for s in spans if s.name == "root.predictor.compactor.summarize"]
    (call,) = [s for s in spans if s.name == "root.predictor.compactor.summarize.prompt"]
    assert step.parent is not None and step.parent.span_id == span.context.span_id
    assert call.parent is not None and call.parent.span_id == step.context.span_id
    assert agent.predictor.memory.as_list()[0].role == MessageRole.USER
