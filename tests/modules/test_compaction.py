"""Compactor and its steps on plain conversations and a scripted model: the trigger, what each
step changes and what it never touches, a summary that fails, the memory hook, the run record,
the checkpoint."""

from __future__ import annotations

import math
from typing import Any

import pytest

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.dto import Message, MessageRole, ThinkingBlock, ToolFunction, ToolRequest, Usage
from promptimus.errors import InvalidArgument, SummaryFailed, UnknownContextWindow
from promptimus.llms import ScriptedLLM
from promptimus.modules import (
    ClearThinking,
    ClearToolResults,
    Compactor,
    MemoryModule,
    Summarize,
)
from promptimus.modules.compaction import SUMMARY_HEADER, cleared_note, known_context_window

U, A, T = MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL


def call(call_id: str, name: str = "lookup") -> ToolRequest:
    return ToolRequest(id=call_id, function=ToolFunction(name=name, arguments='{"key": "x"}'))


def turn(n: int, result: str = "word " * 100, thinking: bool = False) -> list[Message]:
    blocks = [ThinkingBlock(provider="anthropic", text=f"think {n}", signature=f"s{n}")]
    return [
        Message(role=U, content=f"question {n}"),
        Message(
            role=A,
            tool_calls=[call(f"c{n}")],
            thinking=blocks if thinking else None,
            reasoning=f"think {n}" if thinking else None,
        ),
        Message(role=T, tool_call_id=f"c{n}", content=result),
        Message(
            role=A,
            content=f"answer {n}",
            thinking=blocks if thinking else None,
            reasoning=f"think {n}" if thinking else None,
        ),
    ]


def conversation(turns: int, **kwargs: Any) -> list[Message]:
    return [m for n in range(1, turns + 1) for m in turn(n, **kwargs)]


# --- construction -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"trigger_tokens": math.nan},
        {"trigger_tokens": math.inf},
        {"trigger_tokens": "1000"},
        {"trigger_tokens": True},
        {"trigger_tokens": 0},
        {"trigger_fraction": 1.5},
        {"trigger_fraction": math.nan},
        {"trigger_fraction": "0.5"},
        {"trigger_messages": -1},
        {"trigger_tokens": 10, "keep_last": 0},
        {"trigger_tokens": 10, "keep_last": 1.0},
        {"trigger_tokens": 10, "native": "yes"},
    ],
)
def test_bad_settings_are_refused_where_given(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument):
        Compactor(**kwargs)


def test_steps_must_be_compaction_steps_and_excludes_a_collection() -> None:
    with pytest.raises(InvalidArgument, match="compaction steps"):
        Compactor(lambda m: m, trigger_tokens=10)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="exclude="):
        ClearToolResults(exclude="lookup")
    with pytest.raises(InvalidArgument):
        ClearThinking(keep=-1)


def test_context_windows_of_common_models() -> None:
    assert known_context_window("openai:gpt-4o-2024-08-06") == 128_000
    assert known_context_window("claude-sonnet-4-5-20250929") == 200_000
    assert known_context_window("llama3.1:8b") == 131_072
    assert known_context_window("my-own-model") is None


async def test_trigger_fraction_needs_a_known_window() -> None:
    messages = conversation(4)
    with pytest.raises(UnknownContextWindow, match="context_window="):
        await Compactor(trigger_fraction=0.5).compact(messages, llm=ScriptedLLM(model_name="mine"))
    given = Compactor(ClearToolResults(keep=0), trigger_fraction=0.5, context_window=300)
    assert await given.compact(messages, llm=ScriptedLLM(model_name="mine")) is not None


# --- the trigger --------------------------------------------------------------------------------


async def test_under_the_trigger_nothing_changes() -> None:
    messages = conversation(4)
    assert (
        await Compactor(ClearToolResults(keep=0), trigger_tokens=10_000).compact(messages) is None
    )


async def test_the_trigger_reads_the_providers_usage_of_the_last_reply() -> None:
    messages = conversation(3, result="short")
    compactor = Compactor(ClearToolResults(keep=0), trigger_tokens=5000, keep_last=1)
    assert await compactor.compact(messages) is None
    # the provider counted far more than the text suggests (a long system prompt, tools)
    messages[-1] = messages[-1].model_copy(update={"usage": Usage(prompt_tokens=6000)})
    done = await compactor.compact([*messages, *turn(4, result="short")])
    assert done is not None and done.tokens_before > 6000


async def test_trigger_messages_counts_messages() -> None:
    compactor = Compactor(ClearToolResults(keep=0), trigger_messages=12, keep_last=1)
    assert await compactor.compact(conversation(3)) is None
    assert await compactor.compact(conversation(4)) is not None


# --- the steps ----------------------------------------------------------------------------------


async def test_clear_tool_results_keeps_calls_results_and_the_last_turns() -> None:
    messages = conversation(5)
    done = await Compactor(ClearToolResults(keep=1), trigger_tokens=50, keep_last=2).compact(
        messages
    )
    assert done is not None and done.steps == ("clear_tool_results",)
    after = done.messages
    assert [m.role for m in after] == [m.role for m in messages]  # nothing removed
    assert [m.tool_calls for m in after] == [m.tool_calls for m in messages]
    results = [m.content for m in after if m.role == T]
    assert results[:3] == [cleared_note("lookup")] * 3
    assert results[3:] == [messages[10].content, messages[14].content]  # the last 2 turns
    assert after[-8:] == messages[-8:]
    assert messages[2].content != cleared_note("lookup")  # the input list is not changed


async def test_clear_thinking_keeps_thinking_that_led_to_a_tool_call() -> None:
    messages = conversation(4, thinking=True)
    done = await Compactor(ClearThinking(keep=1), trigger_tokens=10, keep_last=1).compact(messages)
    assert done is not None
    old_calls = [m for m in done.messages[:12] if m.tool_calls]
    old_answers = [m for m in done.messages[:12] if m.role == A and not m.tool_calls]
    assert all(m.thinking and m.reasoning is None for m in old_calls)
    assert all(m.thinking is None and m.reasoning is None for m in old_answers)
    assert done.messages[12:] == messages[12:]


async def test_steps_run_cheapest_first_and_stop_once_under() -> None:
    llm = ScriptedLLM(["Known: everything."])
    compactor = Compactor(ClearToolResults(keep=0), Summarize(), trigger_tokens=300, keep_last=1)
    compactor.with_llm(llm)
    done = await compactor.compact(conversation(4))
    assert done is not None and done.steps == ("clear_tool_results",)
    assert llm.requests == []  # the summary was not needed


async def test_summary_replaces_the_oldest_turns_with_one_marked_message() -> None:
    llm = ScriptedLLM(["Facts: question 1 to 3 were answered."])
    compactor = Compactor(Summarize(), trigger_tokens=100, keep_last=1).with_llm(llm)
    messages = conversation(4)
    done = await compactor.compact(messages)
    assert done is not None
    summary, *rest = done.messages
    assert summary.role == U and summary.summary_of == 12
    assert summary.content == SUMMARY_HEADER + "Facts: question 1 to 3 were answered."
    assert rest == messages[12:]
    sent, kwargs = llm.requests[0]
    assert "tools" not in kwargs and sent[0].role == MessageRole.SYSTEM
    assert "question 1" in sent[1].content and "lookup" in sent[1].content


@pytest.mark.parametrize(
    "reply",
    [
        Message(role=A, content="   ", finish_reason="stop"),
        Message(role=A, content="Facts: qu", finish_reason="length"),
        Message(role=A, tool_calls=[call("x")], finish_reason="tool_calls"),
    ],
)
async def test_an_empty_cut_off_or_tool_call_summary_is_an_error(reply: Message) -> None:
    compactor = Compactor(Summarize(), trigger_tokens=100, keep_last=1)
    compactor.with_llm(ScriptedLLM([reply]))
    messages = conversation(4)
    with pytest.raises(SummaryFailed, match="nothing was replaced"):
        await compactor.compact(messages)


# --- in a MemoryModule and an agent -------------------------------------------------------------


async def test_memory_module_keeps_the_compacted_history() -> None:
    llm = ScriptedLLM(lambda history, kwargs: "ok" if "tools" not in kwargs else "x")
    compactor = Compactor(Summarize(), trigger_messages=6, keep_last=1)
    module = MemoryModule(memory_size=100, system_prompt="Chat.", compactor=compactor)
    module.with_llm(llm)
    for n in range(5):
        await module(f"message {n}")
    held = module.memory.as_list()
    assert held[0].summary_of is not None
    assert len(held) < 10
    assert held[-2:] == [Message(role=U, content="message 4"), held[-1]]


async def test_failed_summary_leaves_the_memory_as_it_was() -> None:
    def reply(history: list[Message], kwargs: dict[str, Any]) -> Message:
        if history[-1].content.startswith("Transcript"):
            return Message(role=A, content="", finish_reason="length")
        return Message(role=A, content="ok")

    compactor = Compactor(Summarize(), trigger_messages=4, keep_last=1)
    module = MemoryModule(100, system_prompt="Chat.", compactor=compactor)
    module.with_llm(ScriptedLLM(reply))
    await module("one")
    await module("two")
    before = module.memory.as_list()
    with pytest.raises(SummaryFailed):
        await module("three")
    assert module.memory.as_list() == before


async def test_agent_run_records_compactions_and_the_next_run_starts_compacted() -> None:
    def reply(history: list[Message], kwargs: dict[str, Any]) -> Message:
        if "tools" not in kwargs:
            return Message(role=A, content="summary of the turns")
        if history[-1].role == T:
            return Message(role=A, content="answer")
        return Message(role=A, tool_calls=[call(f"c{len(history)}")])

    def lookup(key: str) -> str:
        """Look up a key."""
        return "word " * 100

    llm = ScriptedLLM(reply)
    compactor = Compactor(ClearToolResults(keep=0), Summarize(), trigger_tokens=200, keep_last=1)
    agent = OpenaiToolCallingAgent("p", [lookup], memory_size=1000, compactor=compactor)
    agent.with_llm(llm)
    records = []
    for n in range(4):
        result = await agent.run(f"question {n}")
        records.append(result.record)
    compacted = [r for r in records if r.compactions]
    assert compacted and "compaction" in compacted[0].summary()
    entry = compacted[0].compactions[0]
    assert entry.step in (0, 1) and entry.tokens_after < entry.tokens_before
    assert compacted[0].to_dict()["compactions"][0]["steps"] == list(entry.steps)
    history = agent.predictor.memory.as_list()
    assert history[0].summary_of is not None or any(
        m.content == cleared_note("lookup") for m in history
    )


def test_summary_prompt_is_a_parameter_in_the_checkpoint_and_the_tree() -> None:
    compactor = Compactor(ClearToolResults(), Summarize("Keep every number."), trigger_tokens=10)
    agent = OpenaiToolCallingAgent("p", [], compactor=compactor)
    state = agent.state_dict()
    assert state["predictor.compactor.summarize.prompt.prompt"] == "Keep every number."
    assert "Summarize" in str(agent) and "ClearToolResults(keep=3)" in str(agent)
    names = [name for name, p in agent.named_parameters() if not p.frozen]
    assert "predictor.compactor.summarize.prompt.prompt" in names
    plain = OpenaiToolCallingAgent("p", [])
    assert not any("compactor" in key for key in plain.state_dict())
