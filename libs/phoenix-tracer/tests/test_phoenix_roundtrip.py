"""Trace an agent run into a real Phoenix server and read the spans back through Phoenix's own
client: names, parents, kinds, token counts, costs — and no API key anywhere."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from phoenix.client import Client
from phoenix_tracer import register, trace

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.errors import InvalidArgument
from promptimus.llms import OpenAILike
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tracing import spans as tracing_spans

SECRET = "sk-phoenix-roundtrip-0123456789"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


@pytest.fixture(autouse=True)
def no_instrumentation_left() -> Iterator[None]:
    yield
    active = tracing_spans._active
    if active is not None:
        active.remove()


def read_spans(client: Client, project: str, expected: int) -> list[dict[str, Any]]:
    """Poll Phoenix until it has ingested `expected` spans (ingestion is asynchronous)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            spans = list(client.spans.get_spans(project_identifier=project, limit=1000))
        except Exception:  # the project appears with its first span
            spans = []
        if len(spans) >= expected or time.monotonic() > deadline:
            return spans
        time.sleep(0.5)


def by_id(spans: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["context"]["span_id"]: s for s in spans}


def shape(spans: list[dict[str, Any]]) -> list[tuple[str, str | None, str]]:
    index = by_id(spans)
    out = []
    for span in spans:
        parent = index.get(span.get("parent_id") or "")
        out.append((span["name"], parent["name"] if parent else None, span["span_kind"]))
    return sorted(out, key=lambda t: (t[0], t[1] or ""))


async def test_agent_run_round_trips_through_phoenix(phoenix: Any) -> None:
    project = "promptimus-roundtrip"
    with FakeOpenAIServer(api_key=SECRET) as server:
        server.chat.script(
            Reply(
                tool_calls=[ToolCall("add", {"a": 2, "b": 3}), ToolCall("explode")],
                usage={"prompt_tokens": 30, "completion_tokens": 7},
            ),
            Reply("5, and one tool failed.", usage={"prompt_tokens": 50, "completion_tokens": 6}),
        )
        llm = OpenAILike("fake-model", api_key=SECRET, base_url=server.base_url)
        agent = OpenaiToolCallingAgent("You compute.", [add, explode]).with_llm(llm)

        provider = trace(
            agent,
            "assistant",
            pricing={"fake-model": (1.0, 2.0)},
            endpoint=phoenix.collector,
            project_name=project,
            api_key=SECRET,  # the collector ignores it; it must stay out of every span
        )
        try:
            reply = await agent("add 2 and 3, then explode")
        finally:
            assert provider.force_flush(30_000)
            provider.shutdown()
    assert reply.content == "5, and one tool failed."

    client = Client(base_url=phoenix.base_url)
    spans = read_spans(client, project, expected=7)
    assert shape(spans) == [
        ("assistant", None, "AGENT"),
        ("assistant.predictor.prompt", "assistant", "CHAIN"),
        ("assistant.predictor.prompt", "assistant", "CHAIN"),
        ("assistant.predictor.prompt.llm", "assistant.predictor.prompt", "LLM"),
        ("assistant.predictor.prompt.llm", "assistant.predictor.prompt", "LLM"),
        ("assistant.tools.add", "assistant", "TOOL"),
        ("assistant.tools.explode", "assistant", "TOOL"),
    ], (phoenix.log, spans)
    assert len({s["context"]["trace_id"] for s in spans}) == 1

    llm_spans = sorted((s for s in spans if s["span_kind"] == "LLM"), key=lambda s: s["start_time"])
    first = llm_spans[0]["attributes"]
    assert first["llm.token_count.prompt"] == 30
    assert first["llm.token_count.completion"] == 7
    assert first["llm.token_count.total"] == 37
    assert first["llm.model_name"] == "fake-model"
    assert first["llm.cost.total"] == pytest.approx((30 * 1.0 + 7 * 2.0) / 1e6)
    assert first["llm.input_messages.0.message.content"] == "You compute."
    failed = next(s for s in spans if s["name"] == "assistant.tools.explode")
    assert failed["status_code"] == "ERROR"
    assert json.dumps(spans).count(SECRET) == 0


async def test_register_defaults_to_root_names_and_checks_the_endpoint(phoenix: Any) -> None:
    with pytest.raises(InvalidArgument, match="http"):
        register(endpoint="localhost:6006")
    project = "promptimus-register"
    with FakeOpenAIServer() as server:
        llm = OpenAILike("fake-model", api_key=server.api_key, base_url=server.base_url)
        agent = OpenaiToolCallingAgent("p", [add]).with_llm(llm)
        provider = register(endpoint=phoenix.base_url, project_name=project)  # base URL is fine
        try:
            await agent("hi")
        finally:
            assert provider.force_flush(30_000)
            provider.shutdown()
    spans = read_spans(Client(base_url=phoenix.base_url), project, expected=3)
    assert shape(spans) == [
        ("root", None, "AGENT"),
        ("root.predictor.prompt", "root", "CHAIN"),
        ("root.predictor.prompt.llm", "root.predictor.prompt", "LLM"),
    ]
