"""Spans from the call path, read back with the OpenTelemetry SDK's in-memory exporter.

Every run goes through the real `openai` SDK against the fake server on 127.0.0.1; each test
asserts the span tree (names, parents, kinds) and the attributes a backend reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("opentelemetry.sdk", reason="install the dev dependency group")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode

from promptimus import Module, Parameter, Session
from promptimus.agents import OpenaiToolCallingAgent, ToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.embedders import OpenAILikeEmbedder
from promptimus.llms import OpenAILike
from promptimus.modules import Prompt, RAGModule, StructuralOutput
from promptimus.rerankers import OpenAILikeReranker
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools import Tool
from promptimus.tracing import disable_tracing, enable_tracing, instrument
from promptimus.vector_stores import InMemoryVectorStore

SECRET = "sk-promptimus-test-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(api_key=SECRET, require_auth=True) as srv:
        yield srv


def llm(srv: FakeOpenAIServer, **kwargs: Any) -> OpenAILike:
    return OpenAILike("fake-model", api_key=SECRET, base_url=srv.base_url, **kwargs)


def usage(prompt: int, completion: int, **extra: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, **extra}


def tree(spans: tuple[ReadableSpan, ...]) -> list[tuple[str, str | None, str]]:
    """(name, parent name, kind) in start order."""
    by_id = {span.context.span_id: span for span in spans}
    out = []
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = by_id.get(span.parent.span_id) if span.parent is not None else None
        kind = (span.attributes or {})["openinference.span.kind"]
        out.append((span.name, parent.name if parent else None, str(kind)))
    return out


def named(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return sorted((s for s in spans if s.name == name), key=lambda s: s.start_time or 0)


def one(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    (span,) = named(spans, name)
    return span


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def assert_one_trace(spans: tuple[ReadableSpan, ...]) -> None:
    assert len({s.context.trace_id for s in spans}) == 1
    roots = [s for s in spans if s.parent is None]
    assert len(roots) == 1, [s.name for s in roots]


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"the tool broke: {reason}")


class Weather(BaseModel):
    city: str
    celsius: float


# --- a Prompt call ------------------------------------------------------------------------------


async def test_prompt_call_has_a_module_span_and_an_llm_span_with_what_was_sent(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    server.chat.script(Reply("Bonjour!", usage=usage(12, 3, cached_tokens=4, reasoning_tokens=1)))
    prompt = Prompt("Answer in {lang}.").with_llm(llm(server, call_kwargs={"temperature": 0.2}))
    history = [Message(role=MessageRole.USER, content="hi")]

    with Session("alice"):
        reply = await prompt(history, provider_kwargs={"max_tokens": 50}, lang="French")

    assert reply.content == "Bonjour!"
    spans = exporter.get_finished_spans()
    assert tree(spans) == [("root", None, "CHAIN"), ("root.llm", "root", "LLM")]
    assert_one_trace(spans)
    module_span, llm_span = one(spans, "root"), one(spans, "root.llm")
    assert module_span.status.status_code is StatusCode.OK
    a = attrs(llm_span)
    # what was sent, not the template
    assert a["llm.input_messages.0.message.role"] == "system"
    assert a["llm.input_messages.0.message.content"] == "Answer in French."
    assert a["llm.input_messages.1.message.role"] == "user"
    assert a["llm.input_messages.1.message.content"] == "hi"
    assert a["llm.output_messages.0.message.role"] == "assistant"
    assert a["llm.output_messages.0.message.content"] == "Bonjour!"
    assert a["llm.prompt_template.template"] == "Answer in {lang}."
    assert json.loads(a["llm.prompt_template.variables"]) == {"lang": "French"}
    assert a["llm.model_name"] == "fake-model"
    assert json.loads(a["llm.invocation_parameters"]) == {"temperature": 0.2, "max_tokens": 50}
    assert a["llm.token_count.prompt"] == 12
    assert a["llm.token_count.completion"] == 3
    assert a["llm.token_count.total"] == 15
    assert a["llm.token_count.prompt_details.cache_read"] == 4
    assert a["llm.token_count.completion_details.reasoning"] == 1
    assert a["session.id"] == "alice" == attrs(module_span)["session.id"]
    # the GenAI vocabulary beside it
    assert a["gen_ai.operation.name"] == "chat"
    assert a["gen_ai.request.model"] == "fake-model"
    assert a["gen_ai.request.temperature"] == 0.2
    assert a["gen_ai.request.max_tokens"] == 50
    assert a["gen_ai.usage.input_tokens"] == 12
    assert a["gen_ai.usage.output_tokens"] == 3
    assert a["gen_ai.response.finish_reasons"] == ("stop",)
    assert a["output.value"] == "Bonjour!"
    metadata = json.loads(attrs(module_span)["metadata"])
    assert metadata["module_digest"] == prompt.digest()
    assert a["input.mime_type"] == "application/json"


async def test_each_top_level_call_is_its_own_trace(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    prompt = Prompt("p").with_llm(llm(server))
    await prompt()
    await prompt()
    roots = named(exporter.get_finished_spans(), "root")
    assert len(roots) == 2 and roots[0].context.trace_id != roots[1].context.trace_id


# --- a streamed call ----------------------------------------------------------------------------


async def test_streamed_agent_run_has_the_same_tree_and_the_streamed_reply(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    server.chat.script(Reply("It is sunny.", usage=usage(9, 4)))
    agent = OpenaiToolCallingAgent("You help.", [add]).with_llm(llm(server))

    events = [event async for event in agent.stream("weather?")]

    assert events[-1].output.content == "It is sunny."
    spans = exporter.get_finished_spans()
    # the tree of an unstreamed run: every model call goes through the prompt module
    assert tree(spans) == [
        ("root", None, "AGENT"),
        ("root.predictor.prompt", "root", "CHAIN"),
        ("root.predictor.prompt.llm", "root.predictor.prompt", "LLM"),
    ]
    a = attrs(one(spans, "root.predictor.prompt.llm"))
    assert a["gen_ai.request.stream"] is True
    assert a["llm.output_messages.0.message.content"] == "It is sunny."
    assert a["llm.token_count.prompt"] == 9 and a["llm.token_count.completion"] == 4
    assert a["llm.prompt_template.template"] == "You help."
    assert json.loads(a["llm.tools.0.tool.json_schema"])["function"]["name"] == "add"
    root = attrs(one(spans, "root"))
    assert root["input.value"] == "weather?"
    assert root["gen_ai.operation.name"] == "invoke_agent"


# --- a tool-calling agent with two tools, one failing ------------------------------------------


async def test_tool_calling_agent_with_a_failing_tool(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    server.chat.script(
        Reply(
            tool_calls=[
                ToolCall("add", {"a": 2, "b": 3}, id="c1"),
                ToolCall("explode", {"reason": "no fuel"}, id="c2"),
            ],
            usage=usage(20, 8),
        ),
        Reply("2 + 3 = 5; the other tool failed.", usage=usage(40, 9)),
    )
    agent = OpenaiToolCallingAgent("You compute.", [add, explode]).with_llm(llm(server))

    reply = await agent("add 2 and 3, then explode")

    assert reply.content.startswith("2 + 3 = 5")
    spans = exporter.get_finished_spans()
    assert_one_trace(spans)
    shape = sorted(tree(spans))
    assert shape == sorted(
        [
            ("root", None, "AGENT"),
            ("root.predictor.prompt", "root", "CHAIN"),
            ("root.predictor.prompt.llm", "root.predictor.prompt", "LLM"),
            ("root.tools.add", "root", "TOOL"),
            ("root.tools.explode", "root", "TOOL"),
            ("root.predictor.prompt", "root", "CHAIN"),
            ("root.predictor.prompt.llm", "root.predictor.prompt", "LLM"),
        ]
    )
    ok, failed = one(spans, "root.tools.add"), one(spans, "root.tools.explode")
    assert ok.status.status_code is StatusCode.OK
    assert attrs(ok)["tool.name"] == "add" == attrs(ok)["gen_ai.tool.name"]
    assert attrs(ok)["tool.description"] == "Add two integers."
    assert json.loads(attrs(ok)["tool.parameters"])["required"] == ["a", "b"]
    assert json.loads(attrs(ok)["input.value"]) == {"a": 2, "b": 3}
    assert attrs(ok)["output.value"] == "5"
    assert failed.status.status_code is StatusCode.ERROR
    assert "the tool broke: no fuel" in (failed.status.description or "")
    (event,) = [e for e in failed.events if e.name == "exception"]
    assert event.attributes["exception.type"] == "builtins.RuntimeError"
    assert one(spans, "root").status.status_code is StatusCode.OK  # the model was told

    first, second = named(spans, "root.predictor.prompt.llm")
    f = attrs(first)
    assert f["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] == "add"
    assert json.loads(
        f["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"]
    ) == {"a": 2, "b": 3}
    assert f["llm.output_messages.0.message.tool_calls.1.tool_call.id"] == "c2"
    s = attrs(second)
    assert s["llm.input_messages.3.message.role"] == "tool"
    assert s["llm.input_messages.3.message.tool_call_id"] == "c1"
    assert s["llm.input_messages.3.message.content"] == "5"
    assert s["llm.input_messages.4.message.tool_call_id"] == "c2"
    assert "the tool broke" in s["llm.input_messages.4.message.content"]


# --- a ReACT agent ------------------------------------------------------------------------------


async def test_react_agent(exporter: InMemorySpanExporter, server: FakeOpenAIServer) -> None:
    server.chat.script(
        'Thought: I should add.\nAction: add\nAction Input: {"a": 1, "b": 41}',
        "Thought: done\nAnswer: 42",
    )
    agent = ToolCallingAgent([add], prompt="You compute.").with_llm(llm(server))

    assert (await agent("1 + 41?")).content == "42"

    spans = exporter.get_finished_spans()
    assert_one_trace(spans)
    assert sorted(tree(spans)) == sorted(
        [
            ("root", None, "AGENT"),
            ("root.predictor.prompt", "root", "CHAIN"),
            ("root.predictor.prompt.llm", "root.predictor.prompt", "LLM"),
            ("root.tools.add", "root", "TOOL"),
            ("root.predictor.prompt", "root", "CHAIN"),
            ("root.predictor.prompt.llm", "root.predictor.prompt", "LLM"),
        ]
    )
    tool = attrs(one(spans, "root.tools.add"))
    assert json.loads(tool["input.value"]) == {"a": 1, "b": 41} and tool["output.value"] == "42"
    first = attrs(named(spans, "root.predictor.prompt.llm")[0])
    # the rendered system prompt (format instructions and tool list), not the template
    assert "add" in first["llm.input_messages.0.message.content"]
    assert attrs(one(spans, "root"))["output.value"] == "42"


# --- structured output with a retry ---------------------------------------------------------------


async def test_structured_output_retry_is_a_span_event(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    server.chat.script('{"city": "Oslo"}', '{"city": "Oslo", "celsius": 4.5}')
    extract = StructuralOutput(Weather, n_retries=2).with_llm(llm(server))

    value = await extract("Oslo, 4.5 degrees")

    assert value == Weather(city="Oslo", celsius=4.5)
    spans = exporter.get_finished_spans()
    assert sorted(tree(spans)) == sorted(
        [
            ("root", None, "CHAIN"),
            ("root.predictor", "root", "CHAIN"),
            ("root.predictor.llm", "root.predictor", "LLM"),
            ("root.predictor", "root", "CHAIN"),
            ("root.predictor.llm", "root.predictor", "LLM"),
        ]
    )
    root = one(spans, "root")
    (retry,) = [e for e in root.events if e.name == "retry"]
    assert retry.attributes["attempt"] == 1
    assert "celsius" in retry.attributes["error"]
    assert json.loads(attrs(root)["output.value"]) == {"city": "Oslo", "celsius": 4.5}
    second = attrs(named(spans, "root.predictor.llm")[1])
    assert "response_format" in json.loads(second["llm.invocation_parameters"])
    assert second["llm.input_messages.2.message.content"] == '{"city": "Oslo"}'


# --- a RAG query with reranking -------------------------------------------------------------------


async def test_rag_query_with_reranking(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    facts = [
        "The Eiffel Tower is 330 metres tall.",
        "Mount Everest is 8849 metres high.",
        "Bananas are rich in potassium.",
    ]
    server.chat.script("330 metres.")
    base = server.base_url
    rag = RAGModule(
        vector_store=InMemoryVectorStore(),
        embedder=OpenAILikeEmbedder("fake-embedding", api_key=SECRET, base_url=base),
        reranker=OpenAILikeReranker("fake-rerank", api_key=SECRET, base_url=base),
        query_template="Use this:\n{context}\n---\nQ: {question}",
        n_after_rerank=1,
    ).with_llm(llm(server))
    await rag.retrieval.insert(facts)
    inserted = exporter.get_finished_spans()
    assert tree(inserted) == [("root.retrieval.embedder", None, "EMBEDDING")]
    assert attrs(inserted[0])["embedding.embeddings.2.embedding.text"] == facts[2]
    exporter.clear()

    reply = await rag("How tall is the Eiffel Tower?")

    assert reply.content == "330 metres."
    spans = exporter.get_finished_spans()
    assert_one_trace(spans)
    assert sorted(tree(spans)) == sorted(
        [
            ("root", None, "CHAIN"),
            ("root.retrieval", "root", "RETRIEVER"),
            ("root.retrieval.embedder", "root.retrieval", "EMBEDDING"),
            ("root.retrieval.reranker", "root.retrieval", "RERANKER"),
            ("root.memory_module.prompt", "root", "CHAIN"),
            ("root.memory_module.prompt.llm", "root.memory_module.prompt", "LLM"),
        ]
    )
    embed = attrs(one(spans, "root.retrieval.embedder"))
    assert embed["embedding.model_name"] == "fake-embedding"
    assert embed["embedding.embeddings.0.embedding.text"] == "How tall is the Eiffel Tower?"
    assert embed["llm.token_count.prompt"] > 0
    rerank = attrs(one(spans, "root.retrieval.reranker"))
    assert rerank["reranker.query"] == "How tall is the Eiffel Tower?"
    assert rerank["reranker.top_k"] == 1
    assert {rerank[f"reranker.input_documents.{i}.document.content"] for i in range(3)} == set(
        facts
    )
    assert rerank["reranker.output_documents.0.document.content"] == facts[0]
    assert "reranker.output_documents.1.document.content" not in rerank
    retrieval = attrs(one(spans, "root.retrieval"))
    assert retrieval["input.value"] == "How tall is the Eiffel Tower?"
    assert retrieval["retrieval.documents.0.document.content"] == facts[0]
    assert isinstance(retrieval["retrieval.documents.0.document.score"], float)
    assert retrieval["retrieval.documents.0.document.id"].startswith("doc-")
    sent = attrs(one(spans, "root.memory_module.prompt.llm"))
    assert sent["llm.input_messages.1.message.content"].startswith(f"Use this:\n{facts[0]}")


# --- an agent used as a tool --------------------------------------------------------------------


async def test_agent_used_as_a_tool_nests_its_spans_under_the_tool_span(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    server.chat.script(
        Reply(tool_calls=[ToolCall("calculator", {"request": "2 + 3"}, id="c1")]),
        Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3}, id="c2")]),  # the sub-agent
        "5",  # the sub-agent's answer
        "The answer is 5.",
    )
    inner = OpenaiToolCallingAgent("You add.", [add])
    outer = OpenaiToolCallingAgent("You delegate.", [Tool.from_module(inner, name="calculator")])
    outer.with_llm(llm(server))

    assert (await outer("what is 2 + 3?")).content == "The answer is 5."

    spans = exporter.get_finished_spans()
    assert_one_trace(spans)
    sub = "root.tools.calculator.module"
    assert sorted(tree(spans)) == sorted(
        [
            ("root", None, "AGENT"),
            ("root.predictor.prompt", "root", "CHAIN"),
            ("root.predictor.prompt.llm", "root.predictor.prompt", "LLM"),
            ("root.tools.calculator", "root", "TOOL"),
            (sub, "root.tools.calculator", "AGENT"),
            (f"{sub}.predictor.prompt", sub, "CHAIN"),
            (f"{sub}.predictor.prompt.llm", f"{sub}.predictor.prompt", "LLM"),
            (f"{sub}.tools.add", sub, "TOOL"),
            (f"{sub}.predictor.prompt", sub, "CHAIN"),
            (f"{sub}.predictor.prompt.llm", f"{sub}.predictor.prompt", "LLM"),
            ("root.predictor.prompt", "root", "CHAIN"),
            ("root.predictor.prompt.llm", "root.predictor.prompt", "LLM"),
        ]
    )
    assert attrs(one(spans, "root.tools.calculator"))["output.value"] == "5"


# --- values that are empty, huge, or not JSON -----------------------------------------------------


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("cannot print me")

    __repr__ = __str__


class Odd(Module):
    def __init__(self) -> None:
        super().__init__()
        self.empty = Parameter("")
        self.unset = Parameter(None)

    async def forward(self, value: Any, **kwargs: Any) -> Any:
        return {"set": {1, 2}, "bytes": b"\x00\xff", "nan": float("nan"), "obj": value}


async def test_empty_huge_and_non_json_values_never_break_a_call(
    exporter: InMemorySpanExporter,
) -> None:
    odd = Odd()
    weird = Unprintable()
    out = await odd(weird, big="x" * 100_000, none=None)
    assert out["obj"] is weird and out["set"] == {1, 2}  # the call's result is untouched
    assert await odd(None) is not None

    first, second = named(exporter.get_finished_spans(), "root")
    a = attrs(first)
    assert first.status.status_code is StatusCode.OK
    assert len(a["input.value"]) < 33_000 and "truncated" in a["input.value"]
    assert a["output.value"]  # serialized somehow, never raised
    assert second.status.status_code is StatusCode.OK


async def test_the_value_limit_is_configurable() -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with instrument(provider, max_value_chars=100):
        await Odd()("y" * 1000)
    (span,) = memory.get_finished_spans()
    assert attrs(span)["input.value"].startswith("y" * 100 + "… [truncated 900")


# --- no API key anywhere --------------------------------------------------------------------------


async def test_no_api_key_in_any_attribute_event_or_resource(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    def leak() -> str:
        """Fails with the key in its message."""
        raise RuntimeError(f"bad key {SECRET}")

    server.chat.script(
        Reply(tool_calls=[ToolCall("leak", {}, id="c1")]),
        "done",
    )
    provider = llm(
        server,
        call_kwargs={"extra_headers": {"Authorization": f"Bearer {SECRET}"}, "user": SECRET},
    )
    agent = OpenaiToolCallingAgent("Key is {key}.", [leak]).with_llm(provider)
    await agent("go", key=SECRET)

    spans = exporter.get_finished_spans()
    assert len(spans) >= 5
    seen = []
    for span in spans:
        seen += [str(v) for v in (span.attributes or {}).values()]
        seen += [str(v) for e in span.events for v in (e.attributes or {}).values()]
        seen += [str(v) for v in span.resource.attributes.values()]
        seen.append(span.status.description or "")
    text = "\n".join(seen)
    assert "[REDACTED]" in text  # the probe sees the places the key would have been
    assert SECRET not in text


# --- switching tracing off ------------------------------------------------------------------------


async def test_tracing_can_be_switched_off_per_tree(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    quiet = OpenaiToolCallingAgent("q", [add]).with_llm(llm(server))
    loud = Prompt("p").with_llm(llm(server))
    disable_tracing(quiet)
    try:
        await quiet("hi")
        await loud()
        assert [s.name for s in exporter.get_finished_spans()] == ["root.llm", "root"]
    finally:
        enable_tracing(quiet)
    exporter.clear()
    await quiet("hi")
    assert "root" in [s.name for s in exporter.get_finished_spans()]


async def test_removed_instrumentation_emits_nothing(server: FakeOpenAIServer) -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    handle = instrument(provider)
    prompt = Prompt("p").with_llm(llm(server))
    await prompt()
    handle.remove()
    await prompt()
    assert [s.name for s in memory.get_finished_spans()] == ["root.llm", "root"]


async def test_a_failing_llm_call_records_the_error_on_both_spans(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    from promptimus.testing import Fault

    server.chat.script(Fault.status(400, body={"error": {"message": "bad request"}}))
    prompt = Prompt("p").with_llm(llm(server, max_retries=0))
    with pytest.raises(Exception):  # noqa: B017 - whatever the provider raises
        await prompt()
    spans = exporter.get_finished_spans()
    assert {s.name: s.status.status_code for s in spans} == {
        "root.llm": StatusCode.ERROR,
        "root": StatusCode.ERROR,
    }


async def test_a_transport_retry_is_an_event_on_the_llm_span(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    from promptimus.testing import Fault
    from promptimus.transport import RetryPolicy

    server.chat.script(Fault.status(429, retry_after=0), "ok")
    provider = llm(server, retry=RetryPolicy(max_retries=2, base_delay=0, max_delay=0))
    assert (await Prompt("p").with_llm(provider)()).content == "ok"

    span = one(exporter.get_finished_spans(), "root.llm")
    (retry,) = [e for e in span.events if e.name == "retry"]
    assert retry.attributes["attempt"] == 1
    assert "429" in retry.attributes["reason"]
    assert span.status.status_code is StatusCode.OK
    assert len(server.chat.requests) == 2


async def test_a_module_class_chooses_its_span_kind(exporter: InMemorySpanExporter) -> None:
    class Lookup(Module):
        span_kind = "RETRIEVER"

        async def forward(self, query: str) -> list[str]:
            return [query.upper()]

    assert await Lookup()("abc") == ["ABC"]
    (span,) = exporter.get_finished_spans()
    assert attrs(span)["openinference.span.kind"] == "RETRIEVER"


async def test_a_budget_stop_is_an_error_on_the_request_span(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    import promptimus as pm

    server.chat.script(Reply("a", usage=usage(10, 10)))
    prompt = Prompt("p").with_llm(llm(server))
    with pm.budget(max_tokens=5):
        await prompt()
        with pytest.raises(pm.BudgetExceeded):
            await prompt()
    second_llm = named(exporter.get_finished_spans(), "root.llm")[1]
    assert second_llm.status.status_code is StatusCode.ERROR
    assert "BudgetExceeded" in (second_llm.status.description or "")
    assert len(server.chat.requests) == 1


async def test_a_refused_call_is_seen_whichever_observer_registered_first(
    server: FakeOpenAIServer,
) -> None:
    import promptimus as pm

    with pm.track_usage():  # the usage observer now registered (before the tracer below)
        pass
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with instrument(provider), pm.budget(max_tokens=1), pytest.raises(pm.BudgetExceeded):
        server.chat.script(Reply("a", usage=usage(10, 10)))
        prompt = Prompt("p").with_llm(llm(server))
        await prompt()
        await prompt()
    assert [s.status.status_code for s in named(memory.get_finished_spans(), "root.llm")] == [
        StatusCode.OK,
        StatusCode.ERROR,
    ]


# --- which model answered -----------------------------------------------------------------------


async def test_a_call_served_by_a_fallback_names_that_model_as_the_response_model(
    exporter: InMemorySpanExporter, server: FakeOpenAIServer
) -> None:
    from promptimus.llms import FallbackLLM
    from promptimus.testing import Fault
    from promptimus.transport.retry import RetryPolicy

    with FakeOpenAIServer(api_key=SECRET, require_auth=True) as backup:
        server.chat.script(Fault.status(503))
        backup.chat.script(Reply("from the backup"))
        primary = llm(server, retry=RetryPolicy(max_retries=0))
        second = OpenAILike("backup-model", api_key=SECRET, base_url=backup.base_url)
        prompt = Prompt("Be brief.").with_llm(FallbackLLM(primary, second))

        reply = await prompt.forward([Message(role=MessageRole.USER, content="hi")])

    assert reply.content == "from the backup"
    spans = exporter.get_finished_spans()
    assert tree(spans) == [("root", None, "CHAIN"), ("root.llm", "root", "LLM")]
    llm_span = one(spans, "root.llm")
    assert attrs(llm_span)["gen_ai.request.model"] == "fake-model"  # what the call asked for
    assert attrs(llm_span)["gen_ai.response.model"] == "backup-model"
    assert attrs(llm_span)["llm.model_name"] == "backup-model"


async def test_a_modules_own_providers_keys_are_redacted_before_any_request(
    exporter: InMemorySpanExporter,
) -> None:
    class Echo(Module):
        async def forward(self, text: str) -> str:
            return text

    reranker = OpenAILikeReranker("fake-rerank", api_key=SECRET, base_url="http://127.0.0.1:9")
    module = Echo().with_reranker(reranker)
    assert module.own_providers() == {"reranker": reranker}
    assert reranker.secrets() == (SECRET,)

    await module(f"the key is {SECRET}")

    span = one(exporter.get_finished_spans(), "root")
    text = json.dumps(dict(span.attributes or {}))
    assert "[REDACTED]" in text and SECRET not in text
