"""Compaction on the Responses API (`OpenAIResponses` against the fake ``/v1/responses``,
stateless: every reasoning item goes back with its encrypted content). The fake refuses a
function call output without its call, a reasoning item not followed by what it led to, and an
input over its context window, so a compaction that breaks the conversation fails here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from long_conversation import lookup, turn_text

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import CompactionEvent, FinalResult
from promptimus.errors import ContextWindowExceeded
from promptimus.llms import OpenAIResponses
from promptimus.modules import ClearThinking, ClearToolResults, Compactor, Summarize
from promptimus.modules.compaction import cleared_note
from promptimus.testing import FakeOpenAIServer, ResponsesReply, ToolCall
from promptimus.transport import RetryPolicy

WINDOW = 1500
TURNS = 12


def kind(item: dict[str, Any]) -> str:
    """An input item's type (a message may be sent as a bare role and content)."""
    return str(item.get("type") or ("message" if "role" in item else None))


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return " ".join(str(part.get("text", "")) for part in content or () if isinstance(part, dict))


def respond(body: dict[str, Any]) -> ResponsesReply:
    """Each turn: reasoning, then two lookups; reasoning, then an answer. A request without
    tools is a summary request, answered with the facts of its transcript."""
    items = body["input"]
    last = items[-1]
    if "tools" not in body:
        facts = sorted(set(re.findall(r"fact-\d+", _text(last))), key=lambda f: int(f[5:]))
        return ResponsesReply(content="Known facts: " + ", ".join(facts))
    if last.get("type") == "function_call_output":
        return ResponsesReply(reasoning="Both found.", content="Done.")
    n = re.search(r"Turn (\d+)", _text(last)).group(1)  # type: ignore[union-attr]
    return ResponsesReply(
        reasoning=f"Look up a{n} and b{n}.",
        tool_calls=[ToolCall("lookup", {"key": f"a{n}"}), ToolCall("lookup", {"key": f"b{n}"})],
    )


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(context_window=WINDOW) as server:
        server.responses.respond_with(respond)
        yield server


def agent(srv: FakeOpenAIServer, compactor: Compactor | None) -> OpenaiToolCallingAgent:
    llm = OpenAIResponses(
        "o-test", api_key=srv.api_key, base_url=srv.base_url, retry=RetryPolicy(max_retries=0)
    )
    made = OpenaiToolCallingAgent(
        "You look things up.", [lookup], memory_size=10_000, compactor=compactor
    )
    return made.with_llm(llm)


async def play(looker: OpenaiToolCallingAgent) -> list[CompactionEvent]:
    events: list[CompactionEvent] = []
    for n in range(1, TURNS + 1):
        async for event in looker.stream(turn_text(n)):
            if isinstance(event, CompactionEvent):
                events.append(event)
            elif isinstance(event, FinalResult):
                assert event.output.content == "Done."
    return events


def last_input(srv: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [item for item in srv.responses.requests[-1]["input"] if isinstance(item, dict)]


def assert_reasoning_leads_to_its_calls(items: list[dict[str, Any]]) -> None:
    """Every reasoning item is followed by what it led to (a function call or a message)."""
    for index, item in enumerate(items):
        if item.get("type") == "reasoning":
            assert kind(items[index + 1]) in {"function_call", "message"}


async def test_without_compaction_the_conversation_overflows(srv: FakeOpenAIServer) -> None:
    with pytest.raises(ContextWindowExceeded):
        await play(agent(srv, None))


async def test_clearing_tool_results_keeps_each_output_with_its_call(srv: FakeOpenAIServer) -> None:
    compactor = Compactor(ClearToolResults(keep=2), trigger_tokens=900, keep_last=1)
    events = await play(agent(srv, compactor))

    assert events and all(e.steps == ("clear_tool_results",) for e in events)
    items = last_input(srv)
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i for i in items if i.get("type") == "function_call_output"]
    assert [o["call_id"] for o in outputs] == calls and len(calls) == 2 * TURNS
    assert outputs[0]["output"] == cleared_note("lookup")
    assert outputs[-1]["output"].startswith(f"record b{TURNS}:")
    # every reasoning item that led to calls went back, each still before its calls
    reasoning = [i for i in items if i.get("type") == "reasoning"]
    # (without ClearThinking the answers' reasoning goes back too: 12 before calls, 11 before
    # the earlier answers)
    assert len(reasoning) == 2 * TURNS - 1 and all(i.get("encrypted_content") for i in reasoning)
    assert_reasoning_leads_to_its_calls(items)


async def test_clearing_thinking_keeps_the_reasoning_that_led_to_calls(
    srv: FakeOpenAIServer,
) -> None:
    # clearing thinking first, so it runs at every compaction
    compactor = Compactor(
        ClearThinking(keep=1), ClearToolResults(keep=2), trigger_tokens=900, keep_last=1
    )
    events = await play(agent(srv, compactor))

    assert any("clear_thinking" in e.steps for e in events)
    items = last_input(srv)
    before_calls = [
        i
        for n, i in enumerate(items)
        if i.get("type") == "reasoning" and items[n + 1].get("type") == "function_call"
    ]
    before_answers = [
        i
        for n, i in enumerate(items)
        if i.get("type") == "reasoning" and kind(items[n + 1]) == "message"
    ]
    assert len(before_calls) == TURNS  # they authenticate the calls: never dropped
    assert before_answers == []  # the earlier answers' reasoning went (11 without the step)
    assert_reasoning_leads_to_its_calls(items)


async def test_summary_on_responses_keeps_early_facts_and_sends_no_tools(
    srv: FakeOpenAIServer,
) -> None:
    compactor = Compactor(Summarize(), trigger_tokens=900, keep_last=1)
    events = await play(agent(srv, compactor))

    assert events and all(e.steps == ("summarize",) for e in events)
    summaries = [body for body in srv.responses.requests if "tools" not in body]
    assert len(summaries) == len(events)
    items = last_input(srv)
    text = " ".join(_text(i) for i in items)
    assert "Summary of the earlier conversation" in text
    assert "fact-1," in text
    assert not any(str(i.get("output", "")).startswith("record a1:") for i in items)
    # the summary stands alone: no output or reasoning of a summarized turn is left over
    calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
    assert all(i["call_id"] in calls for i in items if i.get("type") == "function_call_output")
    assert_reasoning_leads_to_its_calls(items)
