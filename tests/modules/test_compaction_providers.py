"""Compaction of long tool-using conversations on each provider's fake server, through the real
SDKs: the fakes enforce a context window and reject a tool call separated from its result (and,
on Anthropic, thinking missing before its tool use; on Gemini, a call without its signature),
so a compaction that breaks a conversation fails these tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from long_conversation import (
    anthropic_responder,
    gemini_responder,
    lookup,
    openai_responder,
    turn_text,
)

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import CompactionEvent, FinalResult
from promptimus.errors import ContextWindowExceeded
from promptimus.llms import Anthropic, Gemini, OpenAILike
from promptimus.modules import ClearThinking, ClearToolResults, Compactor, Summarize
from promptimus.modules.compaction import cleared_note
from promptimus.testing import FakeAnthropicServer, FakeGeminiServer, FakeOpenAIServer
from promptimus.transport import RetryPolicy

WINDOW = 1500
TURNS = 12
RETRY = RetryPolicy(max_retries=0)


@pytest.fixture
def openai_srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(context_window=WINDOW) as server:
        server.chat.respond_with(openai_responder)
        yield server


@pytest.fixture
def anthropic_srv() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(context_window=WINDOW + 300) as server:
        server.messages.respond_with(anthropic_responder(thinking=True))
        yield server


@pytest.fixture
def gemini_srv() -> Iterator[FakeGeminiServer]:
    with FakeGeminiServer(context_window=WINDOW, require_signatures=True) as server:
        server.generate.respond_with(gemini_responder)
        yield server


def openai_llm(srv: FakeOpenAIServer) -> OpenAILike:
    return OpenAILike("fake-model", api_key=srv.api_key, base_url=srv.base_url, retry=RETRY)


def anthropic_llm(srv: FakeAnthropicServer) -> Anthropic:
    return Anthropic(
        "claude-test",
        api_key=srv.api_key,
        base_url=srv.base_url,
        retry=RETRY,
        max_tokens=300,
        thinking=200,
    )


def gemini_llm(srv: FakeGeminiServer) -> Gemini:
    return Gemini("gemini-3-pro", api_key="k", base_url=srv.base_url, retry=RETRY)


def agent(llm: Any, compactor: Compactor | None) -> OpenaiToolCallingAgent:
    made = OpenaiToolCallingAgent(
        "You look things up.", [lookup], memory_size=10_000, compactor=compactor
    )
    return made.with_llm(llm)


async def play(agent: OpenaiToolCallingAgent, turns: int = TURNS) -> list[CompactionEvent]:
    events: list[CompactionEvent] = []
    for n in range(1, turns + 1):
        async for event in agent.stream(turn_text(n)):
            if isinstance(event, CompactionEvent):
                events.append(event)
            elif isinstance(event, FinalResult):
                assert event.output.content
    return events


# --- without compaction the conversation overflows: what makes the tests below able to fail ----


async def test_openai_without_compaction_overflows(openai_srv: FakeOpenAIServer) -> None:
    with pytest.raises(ContextWindowExceeded):
        await play(agent(openai_llm(openai_srv), None))


async def test_anthropic_without_compaction_overflows(anthropic_srv: FakeAnthropicServer) -> None:
    with pytest.raises(ContextWindowExceeded):
        await play(agent(anthropic_llm(anthropic_srv), None))


async def test_gemini_without_compaction_overflows(gemini_srv: FakeGeminiServer) -> None:
    with pytest.raises(ContextWindowExceeded):
        await play(agent(gemini_llm(gemini_srv), None))


# --- clearing old tool results ------------------------------------------------------------------


async def test_openai_clearing_tool_results_keeps_calls_paired_and_under_window(
    openai_srv: FakeOpenAIServer,
) -> None:
    compactor = Compactor(ClearToolResults(keep=2), trigger_tokens=900, keep_last=1)
    events = await play(agent(openai_llm(openai_srv), compactor))

    assert events and all(e.steps == ("clear_tool_results",) for e in events)
    assert all(e.tokens_after < e.tokens_before for e in events)
    last = openai_srv.chat.requests[-1]["messages"]
    results = [m for m in last if m["role"] == "tool"]
    calls = [c for m in last if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
    # every call is still there, answered, and the old results read as a note naming the tool
    assert len(calls) == len(results) == 2 * TURNS
    assert results[0]["content"] == cleared_note("lookup")
    assert results[-1]["content"].startswith(f"record b{TURNS}:")
    # the user's words are never cleared
    assert next(m["content"] for m in last if m["role"] == "user") == turn_text(1)


async def test_excluded_tools_are_never_cleared(openai_srv: FakeOpenAIServer) -> None:
    compactor = Compactor(ClearToolResults(keep=0, exclude=("lookup",)), trigger_tokens=900)
    with pytest.raises(ContextWindowExceeded):  # nothing it may clear: the window still fills
        await play(agent(openai_llm(openai_srv), compactor))
    sent = [m for body in openai_srv.chat.requests for m in body["messages"]]
    assert not any(m.get("content") == cleared_note("lookup") for m in sent)


async def test_anthropic_thinking_stays_before_its_tool_use(
    anthropic_srv: FakeAnthropicServer,
) -> None:
    compactor = Compactor(
        ClearToolResults(keep=2), ClearThinking(keep=1), trigger_tokens=900, keep_last=1
    )
    events = await play(agent(anthropic_llm(anthropic_srv), compactor))

    assert events
    last = anthropic_srv.messages.requests[-1]["messages"]
    for message in last:
        kinds = (
            [b["type"] for b in message["content"]] if isinstance(message["content"], list) else []
        )
        if "tool_use" in kinds:
            assert kinds[0] == "thinking"  # the fake refuses the request otherwise too


async def test_gemini_signatures_stay_with_their_calls(gemini_srv: FakeGeminiServer) -> None:
    compactor = Compactor(
        ClearToolResults(keep=2), ClearThinking(), trigger_tokens=900, keep_last=1
    )
    events = await play(agent(gemini_llm(gemini_srv), compactor))

    assert events
    contents = gemini_srv.generate.requests[-1]["contents"]
    calls = [p for c in contents for p in c["parts"] if "functionCall" in p]
    assert len(calls) == 2 * TURNS and all(p.get("thoughtSignature") for p in calls)


# --- summarizing the oldest turns ---------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
async def test_summary_replaces_old_turns_keeps_early_facts_and_sends_no_tools(
    provider: str,
    openai_srv: FakeOpenAIServer,
    anthropic_srv: FakeAnthropicServer,
    gemini_srv: FakeGeminiServer,
) -> None:
    llm: Any
    if provider == "openai":
        llm, requests = openai_llm(openai_srv), openai_srv.chat.requests
    elif provider == "anthropic":
        llm, requests = anthropic_llm(anthropic_srv), anthropic_srv.messages.requests
    else:
        llm, requests = gemini_llm(gemini_srv), gemini_srv.generate.requests
    compactor = Compactor(Summarize(), trigger_tokens=900, keep_last=1)
    events = await play(agent(llm, compactor))

    assert events and all(e.steps == ("summarize",) for e in events)
    assert all(e.usage.total_tokens > 0 for e in events)  # the summary's own cost is counted
    summaries = [body for body in requests if "tools" not in body]
    assert len(summaries) == len(events)
    last = str(requests[-1])
    assert "Summary of the earlier conversation" in last
    assert "fact-1," in last  # the first turn's fact survived every compaction
    assert "record a1:" not in last
