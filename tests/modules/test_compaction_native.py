"""`Compactor(native=True)`: on Anthropic the server clears old tool results and thinking itself
(context editing), through the official SDK against the fake Anthropic server, which applies
the edits before sizing the request against its window and reports what they cleared; on a
provider without context editing the same compactor runs its steps here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from long_conversation import anthropic_responder, lookup, openai_responder, turn_text

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import CompactionEvent, FinalResult
from promptimus.dto import Message, MessageRole
from promptimus.dto.run_record import RunRecord
from promptimus.errors import ContextWindowExceeded, MalformedReply
from promptimus.llms import Anthropic, OpenAILike
from promptimus.llms.cache_key import request_key
from promptimus.modules import ClearThinking, ClearToolResults, Compactor, Summarize
from promptimus.modules.compaction import cleared_note
from promptimus.testing import FakeAnthropicServer, FakeOpenAIServer
from promptimus.testing.anthropic_context_edits import CLEARED_TOOL_RESULT
from promptimus.transport import RetryPolicy

WINDOW = 1800
TURNS = 12
TRIGGER = 900
RETRY = RetryPolicy(max_retries=0)
BETA = "context-management-2025-06-27"


@pytest.fixture
def anthropic_srv() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(context_window=WINDOW) as server:
        server.messages.respond_with(anthropic_responder(thinking=True))
        yield server


def anthropic_llm(srv: FakeAnthropicServer) -> Anthropic:
    return Anthropic(
        "claude-test",
        api_key=srv.api_key,
        base_url=srv.base_url,
        retry=RETRY,
        max_tokens=300,
        thinking=200,
    )


def native(*steps: Any) -> Compactor:
    steps = steps or (ClearToolResults(keep=2, exclude=("search",)), ClearThinking(keep=1))
    return Compactor(*steps, trigger_tokens=TRIGGER, keep_last=1, native=True)


def agent(llm: Any, compactor: Compactor | None) -> OpenaiToolCallingAgent:
    made = OpenaiToolCallingAgent(
        "You look things up.", [lookup], memory_size=10_000, compactor=compactor
    )
    return made.with_llm(llm)


async def play(
    agent: OpenaiToolCallingAgent, turns: int = TURNS, stream: bool = True
) -> tuple[list[CompactionEvent], list[RunRecord]]:
    """Plays `turns` turns; the compaction events streamed and each run's record."""
    events: list[CompactionEvent] = []
    records: list[RunRecord] = []
    for n in range(1, turns + 1):
        if not stream:
            result = await agent.run(turn_text(n))
            records.append(result.record)
            continue
        async for event in agent.stream(turn_text(n)):
            if isinstance(event, CompactionEvent):
                events.append(event)
            elif isinstance(event, FinalResult):
                assert event.output.content
                records.append(event.record)
    return events, records


async def test_without_a_compactor_the_conversation_overflows(
    anthropic_srv: FakeAnthropicServer,
) -> None:
    with pytest.raises(ContextWindowExceeded):
        await play(agent(anthropic_llm(anthropic_srv), None))


async def test_native_mode_sends_the_steps_as_context_edits_under_the_beta(
    anthropic_srv: FakeAnthropicServer,
) -> None:
    await play(agent(anthropic_llm(anthropic_srv), native()), turns=1)

    body = anthropic_srv.messages.requests[-1]
    assert body["context_management"] == {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "keep": {"type": "tool_uses", "value": 2},
                "trigger": {"type": "input_tokens", "value": TRIGGER},
                "exclude_tools": ["search"],
            },
            {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}},
        ]
    }
    headers = anthropic_srv.requests[-1].headers
    assert BETA in headers.get("anthropic-beta", "").split(",")


@pytest.mark.parametrize("stream", [True, False])
async def test_native_mode_fits_the_window_and_records_the_servers_figures(
    anthropic_srv: FakeAnthropicServer, stream: bool
) -> None:
    compacting = agent(anthropic_llm(anthropic_srv), native())
    events, records = await play(compacting, stream=stream)

    compactions = [c for record in records for c in record.compactions]
    assert compactions, "the server's edits were not recorded"
    if stream:
        assert [(e.step, e.tokens_before, e.tokens_after) for e in events] == [
            (c.step, c.tokens_before, c.tokens_after) for c in compactions
        ]
    last = compactions[-1]
    assert "clear_tool_results" in last.steps
    assert last.tokens_before > WINDOW > last.tokens_after
    # the memory keeps the whole conversation: the server clears it on each request
    sent = anthropic_srv.messages.requests[-1]["messages"]
    results = [
        b
        for m in sent
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert len(results) == 2 * TURNS
    assert all(CLEARED_TOOL_RESULT not in str(b["content"]) for b in results)


async def test_figures_are_those_the_server_reported(anthropic_srv: FakeAnthropicServer) -> None:
    compacting = agent(anthropic_llm(anthropic_srv), native())
    _, records = await play(compacting, turns=4)
    record = records[-1]
    assert record.compactions
    reply = record.steps[record.compactions[-1].step].reply
    edits = reply.context_edits
    assert edits
    cleared = sum(edit["cleared_input_tokens"] for edit in edits)
    assert cleared > 0
    assert reply.usage is not None
    after = reply.usage.prompt_tokens
    assert (record.compactions[-1].tokens_before, record.compactions[-1].tokens_after) == (
        after + cleared,
        after,
    )


async def test_summarize_still_runs_here_after_the_servers_edits(
    anthropic_srv: FakeAnthropicServer,
) -> None:
    compactor = native(ClearToolResults(keep=2), Summarize())
    compacting = agent(anthropic_llm(anthropic_srv), compactor)
    events, _ = await play(compacting, turns=TURNS)

    local = [e for e in events if "summarize" in e.steps]
    assert local, "Summarize did not run"
    assert all("clear_tool_results" not in e.steps for e in local)
    summaries = [b for b in anthropic_srv.messages.requests if "tools" not in b]
    assert summaries
    assert all("context_management" not in b for b in summaries)


async def test_without_native_support_the_steps_run_locally() -> None:
    with FakeOpenAIServer(context_window=1500) as server:
        server.chat.respond_with(openai_responder)
        llm = OpenAILike(
            "fake-model", api_key=server.api_key, base_url=server.base_url, retry=RETRY
        )
        events, _ = await play(agent(llm, native(ClearToolResults(keep=2))))
        assert events and all(e.steps == ("clear_tool_results",) for e in events)
        last = server.chat.requests[-1]
        assert "context_management" not in last
        results = [m for m in last["messages"] if m["role"] == "tool"]
        assert results[0]["content"] == cleared_note("lookup")


@pytest.mark.parametrize("applied", ["cleared", [1, 2], {"type": "clear_tool_uses_20250919"}])
async def test_a_malformed_report_of_the_edits_is_refused(
    anthropic_srv: FakeAnthropicServer, applied: Any
) -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "Hello."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 5, "output_tokens": 2},
        "context_management": {"applied_edits": applied},
    }
    anthropic_srv.messages.respond_with(lambda _: body)
    llm = anthropic_llm(anthropic_srv)
    with pytest.raises(MalformedReply, match="applied_edits"):
        await llm.achat([Message(role=MessageRole.USER, content="Hi")])


def test_what_the_server_cleared_does_not_change_a_response_cache_key() -> None:
    llm = OpenAILike("m", api_key="k", base_url="http://127.0.0.1:9/v1")
    question = [Message(role=MessageRole.USER, content="Hi")]
    edits = [{"type": "clear_tool_uses_20250919", "cleared_input_tokens": 40}]
    edited = Message(role=MessageRole.ASSISTANT, content="Hello.", context_edits=edits)
    plain = Message(role=MessageRole.ASSISTANT, content="Hello.")
    assert request_key(llm, [*question, edited], {}) == request_key(llm, [*question, plain], {})


def test_with_every_step_on_the_server_nothing_is_left_to_run_here() -> None:
    claude = Anthropic("claude-test", api_key="k", base_url="http://127.0.0.1:9")
    long = [Message(role=MessageRole.USER, content="word " * 2000)]
    assert not native().needed(long, claude)  # the server clears; no local pass, no span
    assert native(ClearToolResults(), Summarize()).needed(long, claude)
    assert native().needed(long, OpenAILike("m", api_key="k", base_url="http://127.0.0.1:9/v1"))
