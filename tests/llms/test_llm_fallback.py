"""FallbackLLM through the fake OpenAI server: which failures move to the next provider, streams
fall back only before their first chunk, and every reply names the model that produced it."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel
from virtual_clock import VirtualClock

import promptimus as pm
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole
from promptimus.errors import (
    AllProvidersFailed,
    BudgetExceeded,
    RequestRejected,
    StreamInterrupted,
)
from promptimus.llms import FallbackLLM, ScriptedLLM, aaccumulate, falls_through
from promptimus.llms.openai import OpenAILike
from promptimus.modules.prompt import Prompt
from promptimus.modules.structural import StructuralOutput
from promptimus.testing import FakeOpenAIServer, Fault, Reply, ToolCall
from promptimus.transport.retry import RetryPolicy

RETRIES = 2  # each provider makes RETRIES + 1 attempts before the chain moves on
QUESTION = [Message(role=MessageRole.USER, content="hello")]


@pytest.fixture
def primary() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
def backup() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def llm(srv: FakeOpenAIServer, model: str, clock: VirtualClock, **kwargs: Any) -> OpenAILike:
    policy = RetryPolicy(max_retries=RETRIES, base_delay=0.5, sleep=clock.sleep)
    return OpenAILike(
        model, api_key=srv.api_key, base_url=srv.base_url, retry=policy, timeout=10, **kwargs
    )


def chain(primary: FakeOpenAIServer, backup: FakeOpenAIServer, clock: VirtualClock) -> FallbackLLM:
    return FallbackLLM(llm(primary, "model-a", clock), llm(backup, "model-b", clock))


def down(n: int = RETRIES + 1, status: int = 503) -> list[Fault]:
    return [Fault.status(status)] * n


# --- which failures fall through ----------------------------------------------------------------


async def test_falls_back_on_503_after_the_primarys_own_retries(
    primary: FakeOpenAIServer, backup: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    primary.chat.script(*down())
    backup.chat.script("from b")

    reply = await chain(primary, backup, virtual_clock).achat(QUESTION)

    assert reply.content == "from b"
    assert reply.model_name == "model-b"
    assert len(primary.chat.requests) == RETRIES + 1  # every retry was spent first
    assert len(virtual_clock.sleeps) == RETRIES
    assert len(backup.chat.requests) == 1


async def test_a_primary_that_recovers_within_its_retries_serves_the_call(
    primary: FakeOpenAIServer, backup: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    primary.chat.script(Fault.status(503), "from a")

    reply = await chain(primary, backup, virtual_clock).achat(QUESTION)

    assert (reply.content, reply.model_name) == ("from a", "model-a")
    assert len(backup.chat.requests) == 0


@pytest.mark.parametrize(
    "fault",
    [Fault.status(400), Fault.status(401), Fault.status(404), Fault.context_overflow()],
    ids=["400", "401", "404", "context-overflow"],
)
async def test_no_fallback_when_the_request_itself_is_rejected(
    primary: FakeOpenAIServer, backup: FakeOpenAIServer, virtual_clock: VirtualClock, fault: Fault
) -> None:
    primary.chat.script(fault)

    with pytest.raises(RequestRejected):
        await chain(primary, backup, virtual_clock).achat(QUESTION)

    assert len(primary.chat.requests) == 1  # not retried either
    assert len(backup.chat.requests) == 0


async def test_falls_back_on_rate_limits_and_on_an_unreachable_server(
    backup: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    with FakeOpenAIServer() as gone:
        dead = llm(gone, "model-dead", virtual_clock)
    with FakeOpenAIServer() as limited:
        limited.chat.script(*[Fault.status(429, retry_after=1)] * (RETRIES + 1))
        backup.chat.script("from b")
        both = FallbackLLM(
            dead, llm(limited, "model-limited", virtual_clock), llm(backup, "b", virtual_clock)
        )

        reply = await both.achat(QUESTION)

        assert reply.content == "from b"
        assert len(limited.chat.requests) == RETRIES + 1
        assert virtual_clock.sleeps.count(1.0) == RETRIES  # Retry-After honoured before moving on


async def test_a_rejection_after_a_failure_is_raised_with_a_note_on_the_earlier_one(
    primary: FakeOpenAIServer, backup: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    primary.chat.script(*down())
    backup.chat.script(Fault.status(400))

    with pytest.raises(RequestRejected) as caught:
        await chain(primary, backup, virtual_clock).achat(QUESTION)

    assert "model-a" in " ".join(caught.value.__notes__)


async def test_all_failing_lists_every_provider_and_never_the_api_key(
    virtual_clock: VirtualClock,
) -> None:
    keys = ["sk-primary-secret-1234", "sk-backup-secret-5678"]
    servers = [FakeOpenAIServer().start(), FakeOpenAIServer().start()]
    try:
        for server, key in zip(servers, keys, strict=True):
            body = {"error": {"message": f"overloaded, key {key} rejected", "type": "server"}}
            server.chat.script(*[Fault.status(503, body=body)] * (RETRIES + 1))
        policy = RetryPolicy(max_retries=RETRIES, sleep=virtual_clock.sleep)
        both = FallbackLLM(
            *(
                OpenAILike(f"model-{i}", api_key=key, base_url=server.base_url, retry=policy)
                for i, (server, key) in enumerate(zip(servers, keys, strict=True))
            )
        )

        with pytest.raises(AllProvidersFailed) as caught:
            await both.achat(QUESTION)
    finally:
        for server in servers:
            server.stop()

    error = caught.value
    assert [model for model, _ in error.failures] == ["model-0", "model-1"]
    assert "model-0" in str(error) and "model-1" in str(error) and "HTTP 503" in str(error)
    assert error.__cause__ is error.failures[-1][1]
    shown = "".join(traceback.format_exception(error)) + repr(error.failures)
    for key in keys:
        assert key not in shown


def test_falls_through_rule_for_errors_of_custom_providers() -> None:
    assert falls_through(ConnectionError("refused"))
    assert falls_through(TimeoutError())
    assert not falls_through(ValueError("a bug"))
    assert not falls_through(RequestRejected("no", status=400))


async def test_custom_providers_and_a_custom_rule() -> None:
    broken = ScriptedLLM([ConnectionError("refused")], model_name="a")
    buggy = ScriptedLLM([KeyError("bug")], model_name="b")
    spare = ScriptedLLM(["spare", "spare"], model_name="c")

    assert (await FallbackLLM(broken, spare).achat(QUESTION)).model_name == "c"
    with pytest.raises(KeyError):
        await FallbackLLM(buggy, spare).achat(QUESTION)
    assert len(spare.requests) == 1

    anything = FallbackLLM(ScriptedLLM([KeyError("bug")]), spare, fallback_on=lambda e: True)
    assert (await anything.achat(QUESTION)).content == "spare"


# --- streaming ----------------------------------------------------------------------------------


async def test_stream_falls_back_before_its_first_chunk(
    primary: FakeOpenAIServer, backup: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    primary.chat.script(*down())
    backup.chat.script("streamed from b")

    reply = await aaccumulate(chain(primary, backup, virtual_clock).astream(QUESTION))

    assert (reply.content, reply.model_name) == ("streamed from b", "model-b")
    assert len(primary.chat.requests) == RETRIES + 1 and len(backup.chat.requests) == 1


async def test_stream_cut_before_any_chunk_falls_back(
    primary: FakeOpenAIServer, backup: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    primary.chat.script(Fault.cut(after_chunks=0))
    backup.chat.script("from b")

    reply = await aaccumulate(chain(primary, backup, virtual_clock).astream(QUESTION))

    assert reply.model_name == "model-b"


async def test_stream_does_not_fall_back_after_its_first_chunk(
    primary: FakeOpenAIServer, backup: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    primary.chat.script(Fault.cut())  # every chunk but the finish chunk, then the end
    received: list[str] = []

    with pytest.raises(StreamInterrupted):
        async for delta in chain(primary, backup, virtual_clock).astream(QUESTION):
            received.append(delta.content or "")

    assert "".join(received)  # output had reached the caller
    assert len(backup.chat.requests) == 0


# --- model names, capabilities, usage, agents ---------------------------------------------------


async def test_every_reply_names_the_model_the_server_says_produced_it(
    primary: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    primary.chat.script(Reply("dated", model="gpt-4o-2024-08-06"), Reply("streamed", model="m-2"))
    provider = llm(primary, "gpt-4o", virtual_clock)

    assert (await provider.achat(QUESTION)).model_name == "gpt-4o-2024-08-06"
    assert (await aaccumulate(provider.astream(QUESTION))).model_name == "m-2"
    scripted = ScriptedLLM(["x", "y"], model_name="scripted-1")
    assert (await scripted.achat(QUESTION)).model_name == "scripted-1"
    assert (await aaccumulate(scripted.astream(QUESTION))).model_name == "scripted-1"


class City(BaseModel):
    name: str


async def test_structured_output_degrades_through_the_chain(
    primary: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    with FakeOpenAIServer(reject_response_format=["json_schema"]) as picky:
        primary.chat.respond_with(lambda body: Fault.status(503))  # down for good
        picky.chat.script('{"name": "Oslo"}')
        both = FallbackLLM(llm(primary, "model-a", virtual_clock), llm(picky, "b", virtual_clock))
        structured = StructuralOutput(City).with_llm(both)

        assert await structured("Which city?") == City(name="Oslo")
        kinds = [r["response_format"]["type"] for r in picky.chat.requests]

    assert kinds == ["json_schema", "json_object"]  # rejected by the fallback, then degraded
    assert both.capabilities.response_format == "json_object"


async def test_usage_is_counted_for_the_model_that_answered(
    primary: FakeOpenAIServer, backup: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    primary.chat.script(*down())
    backup.chat.script(Reply("ok", usage={"prompt_tokens": 7, "completion_tokens": 2}))
    prompt = Prompt("Be brief.").with_llm(chain(primary, backup, virtual_clock))

    with pm.track_usage() as usage:
        await prompt.forward([Message(role=MessageRole.USER, content="hi")])

    assert usage.total.requests_by_model == {"model-b": 1}
    assert (usage.total.prompt_tokens, usage.total.completion_tokens) == (7, 2)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_agent_run_record_shows_the_fallback_model(
    primary: FakeOpenAIServer,
    backup: FakeOpenAIServer,
    virtual_clock: VirtualClock,
    stream: bool,
) -> None:
    primary.chat.respond_with(lambda body: Fault.status(503))
    backup.chat.script(Reply(tool_calls=[ToolCall("add", {"a": 2, "b": 3})]), "It is 5.")
    agent = OpenaiToolCallingAgent("Use tools.", [add]).with_llm(
        chain(primary, backup, virtual_clock)
    )

    if stream:
        events = [event async for event in agent.stream("2+3?")]
        record = events[-1].record  # type: ignore[attr-defined]
    else:
        _, record = await asyncio.wait_for(agent.run("2+3?"), 30)

    assert [step.reply.model_name for step in record.steps] == ["model-b", "model-b"]
    assert record.to_dict()["steps"][0]["reply"]["model_name"] == "model-b"
    assert len(primary.chat.requests) == 2 * (RETRIES + 1)


async def test_a_cost_budget_needs_a_price_for_every_model_of_the_chain(
    primary: FakeOpenAIServer, backup: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    prompt = Prompt("Be brief.").with_llm(chain(primary, backup, virtual_clock))
    hello = [Message(role=MessageRole.USER, content="hi")]

    one_price = {"model-a": (1.0, 1.0, 1.0)}
    with pm.budget(max_cost=1.0, pricing=one_price), pytest.raises(BudgetExceeded, match="model-b"):
        await prompt.forward(hello)
    assert len(primary.chat.requests) == len(backup.chat.requests) == 0

    primary.chat.script(*down())
    prices = {"model-a": (1.0, 1.0, 1.0), "model-b": (1e6, 1e6, 1e6)}
    with pm.budget(max_cost=1.0, pricing=prices) as spend:
        await prompt.forward(hello)  # served by model-b, priced as model-b
        assert spend.cost is not None and spend.cost > 1.0
        with pytest.raises(BudgetExceeded, match="Cost budget reached"):
            await prompt.forward(hello)


async def test_observers_see_a_fallback_event_on_the_call(
    primary: FakeOpenAIServer, backup: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    from promptimus.core.provider_calls import register_provider_call_observer

    seen: list[tuple[str, dict[str, Any]]] = []

    class Watcher:
        def on_start(self, call: Any) -> None:
            pass

        def on_end(self, call: Any) -> None:
            seen.append(("end", {"model": call.model, "requests": call.request_count}))

        def on_call_event(self, call: Any, name: str, attributes: Any) -> None:
            seen.append((name, dict(attributes)))

    primary.chat.script(*down())
    handle = register_provider_call_observer(Watcher())
    try:
        await Prompt("Be brief.").with_llm(chain(primary, backup, virtual_clock)).forward(QUESTION)
    finally:
        handle.remove()

    assert [name for name, _ in seen] == ["retry"] * RETRIES + ["fallback", "end"]
    assert seen[-2][1]["failed"] == "model-a" and seen[-2][1]["next"] == "model-b"
    assert seen[-1][1] == {"model": "model-b", "requests": 1}


async def test_a_reply_whose_server_names_no_model_names_the_model_asked_for(
    primary: FakeOpenAIServer, virtual_clock: VirtualClock
) -> None:
    message = {"role": "assistant", "content": "hi"}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    primary.chat.script({"id": "x", "object": "chat.completion", "choices": [choice]})

    reply = await llm(primary, "asked-for", virtual_clock).achat(QUESTION)

    assert (reply.content, reply.model_name) == ("hi", "asked-for")


async def test_a_nested_chain_counts_the_model_that_served_the_call() -> None:
    inner = FallbackLLM(
        ScriptedLLM([ConnectionError("b down")], model_name="b"),
        ScriptedLLM(["from c"], model_name="c"),
    )
    outer = FallbackLLM(ScriptedLLM([ConnectionError("a down")], model_name="a"), inner)
    prompt = Prompt("Be brief.").with_llm(outer)

    with pm.track_usage() as usage:
        reply = await prompt.forward(QUESTION)

    assert reply.model_name == "c"
    assert usage.total.requests_by_model == {"c": 1}
    assert outer.model_names == ("a", "b", "c")
