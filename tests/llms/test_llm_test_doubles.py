"""DummyLLm, ScriptedLLM and delta accumulation: the in-process test doubles."""

from __future__ import annotations

import asyncio
import json

import pytest

from promptimus.dto import Message, MessageDelta, MessageRole, ToolCallDelta, Usage
from promptimus.errors import PromptimusError, ScriptExhausted, StreamInterrupted
from promptimus.llms import (
    DummyLLm,
    MessageAccumulator,
    ScriptedLLM,
    aaccumulate,
    accumulate,
)


def user(text: str) -> Message:
    return Message(role=MessageRole.USER, content=text)


# --- DummyLLm ----------------------------------------------------------------------------------


async def test_dummy_replies_its_message_and_records_calls() -> None:
    llm = DummyLLm("hello there")
    reply = await llm.achat([user("hi")], temperature=0)
    assert reply.role == MessageRole.ASSISTANT
    assert reply.content == "hello there"
    assert len(llm.calls) == 1
    history, kwargs = llm.calls[0]
    assert history[0].content == "hi"
    assert kwargs == {"temperature": 0}


async def test_dummy_default_and_delay() -> None:
    llm = DummyLLm(delay=0.05)
    loop = asyncio.get_running_loop()
    start = loop.time()
    reply = await llm.achat([user("x")])
    assert reply.content == "dummy"
    assert loop.time() - start >= 0.05


async def test_dummy_stream_adds_up_to_message() -> None:
    llm = DummyLLm("several words in here")
    deltas = [d async for d in llm.astream([user("x")])]
    assert len(deltas) > 2
    assert accumulate(deltas).content == "several words in here"


# --- ScriptedLLM -------------------------------------------------------------------------------


async def test_scripted_replays_in_order_and_records_requests() -> None:
    llm = ScriptedLLM(["first", Message(role=MessageRole.ASSISTANT, content="second")])
    a = await llm.achat([user("q1")])
    b = await llm.achat([user("q1"), a, user("q2")], tools=[{"x": 1}])
    assert (a.content, b.content) == ("first", "second")
    assert [len(h) for h, _ in llm.requests] == [1, 3]
    assert llm.requests[1][1] == {"tools": [{"x": 1}]}
    assert llm.remaining == 0


async def test_scripted_records_copies_not_live_history() -> None:
    llm = ScriptedLLM(["ok"])
    history = [user("original")]
    await llm.achat(history)
    history.append(user("later"))
    history[0].content = "mutated"
    recorded, _ = llm.requests[0]
    assert [m.content for m in recorded] == ["original"]


async def test_scripted_exhaustion_is_a_clear_error() -> None:
    llm = ScriptedLLM(["only"])
    await llm.achat([user("a")])
    with pytest.raises(ScriptExhausted, match="had 1 scripted reply") as info:
        await llm.achat([user("b")])
    assert isinstance(info.value, PromptimusError)
    assert len(llm.requests) == 2  # the failing request is still recorded for debugging


async def test_scripted_exhaustion_also_when_streaming() -> None:
    llm = ScriptedLLM([])
    with pytest.raises(ScriptExhausted, match="had 0 scripted replies"):
        async for _ in llm.astream([user("a")]):
            pass


async def test_scripted_function_mode_sees_history_and_kwargs() -> None:
    def reply(history: list[Message], kwargs: dict) -> str:
        return f"{history[-1].content.upper()} t={kwargs.get('temperature')}"

    llm = ScriptedLLM(reply)
    assert (await llm.achat([user("abc")], temperature=0.5)).content == "ABC t=0.5"
    assert (await llm.achat([user("xyz")])).content == "XYZ t=None"
    assert llm.remaining is None


async def test_scripted_async_function_items_mixed_with_text() -> None:
    async def computed(history: list[Message], kwargs: dict) -> Message:
        await asyncio.sleep(0)
        return Message(role=MessageRole.ASSISTANT, content=f"saw {len(history)}")

    llm = ScriptedLLM(["plain", computed])
    assert (await llm.achat([user("a")])).content == "plain"
    assert (await llm.achat([user("a"), user("b")])).content == "saw 2"


async def test_scripted_tool_call_helpers() -> None:
    single = ScriptedLLM.tool_call("search", {"q": "cats"}, id="c1")
    multi = ScriptedLLM.tool_calls(("add", {"a": 1}), ("mul", {"b": 2}))
    llm = ScriptedLLM([single, multi])
    first = await llm.achat([user("x")])
    assert first.tool_calls is not None
    call = first.tool_calls[0]
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "c1",
        "search",
        {"q": "cats"},
    )
    assert first.finish_reason == "tool_calls"
    second = await llm.achat([user("x")])
    assert [c.function.name for c in second.tool_calls or []] == ["add", "mul"]
    ids = [c.id for c in second.tool_calls or []]
    assert all(ids) and len(set(ids)) == 2


async def test_scripted_raw_invalid_json_arguments_pass_through() -> None:
    llm = ScriptedLLM([ScriptedLLM.tool_call("f", '{"broken": ')])
    reply = await llm.achat([user("x")])
    assert reply.tool_calls is not None
    assert reply.tool_calls[0].function.arguments == '{"broken": '


async def test_scripted_exception_item_is_raised() -> None:
    llm = ScriptedLLM([RuntimeError("boom"), "after"])
    with pytest.raises(RuntimeError, match="boom"):
        await llm.achat([user("x")])
    assert (await llm.achat([user("x")])).content == "after"


async def test_scripted_keeps_scripted_usage_and_estimates_otherwise() -> None:
    usage = Usage(prompt_tokens=7, completion_tokens=3, total_tokens=10, cached_tokens=2)
    llm = ScriptedLLM(
        [Message(role=MessageRole.ASSISTANT, content="a b", usage=usage), "one two three"]
    )
    assert (await llm.achat([user("x")])).usage == usage
    estimated = (await llm.achat([user("four words are here")])).usage
    assert estimated is not None
    assert (estimated.prompt_tokens, estimated.completion_tokens) == (4, 3)
    assert estimated.total_tokens == 7


def _rich_reply() -> Message:
    return Message(
        role=MessageRole.ASSISTANT,
        content="  Let me look that up,  then answer.\nDone ",
        reasoning="The user wants weather. Use the tool.",
        tool_calls=[
            ScriptedLLM.call("weather", {"city": "Paris", "unit": "C"}, id="w1"),
            ScriptedLLM.call("time", {}, id="t1"),
        ],
        usage=Usage(prompt_tokens=5, completion_tokens=9, total_tokens=14, reasoning_tokens=4),
    )


async def test_scripted_stream_and_chat_give_the_same_message() -> None:
    chat = await ScriptedLLM([_rich_reply()]).achat([user("weather?")])
    deltas = [d async for d in ScriptedLLM([_rich_reply()]).astream([user("weather?")])]
    assert len(deltas) > 6  # really split: words, reasoning, tool-call fragments
    assert any(d.reasoning for d in deltas)
    assert any(len(d.tool_calls) == 1 and not d.tool_calls[0].name for d in deltas)
    assert deltas[-1].usage == chat.usage and deltas[-1].finish_reason == "tool_calls"
    assert accumulate(deltas) == chat


async def test_scripted_stream_plain_text_parity_and_aaccumulate() -> None:
    text = "streamed  text with\ttabs"
    chat = await ScriptedLLM([text]).achat([user("a")])
    streamed = await aaccumulate(ScriptedLLM([text]).astream([user("a")]))
    assert streamed == chat
    assert streamed.content == text and streamed.finish_reason == "stop"


# --- accumulation --------------------------------------------------------------------------------


def test_accumulator_joins_tool_call_fragments_by_index() -> None:
    acc = MessageAccumulator()
    acc.add(MessageDelta(content="Hi"))
    acc.add(
        MessageDelta(
            tool_calls=[
                ToolCallDelta(index=1, id="b", name="second", arguments='{"y"'),
                ToolCallDelta(index=0, id="a", name="first", arguments=""),
            ]
        )
    )
    acc.add(MessageDelta(tool_calls=[ToolCallDelta(index=1, arguments=": 2}")]))
    acc.add(MessageDelta(tool_calls=[ToolCallDelta(index=0, arguments='{"x": 1}')]))
    acc.add(MessageDelta(finish_reason="tool_calls", usage=Usage(total_tokens=3)))
    message = acc.message()
    assert message.content == "Hi"
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []] == [
        ("a", "first", '{"x": 1}'),
        ("b", "second", '{"y": 2}'),
    ]
    assert message.finish_reason == "tool_calls"
    assert message.usage == Usage(total_tokens=3)
    assert message.reasoning is None


def test_accumulating_a_stream_without_finish_reason_raises_stream_interrupted() -> None:
    # An empty or cut-off stream is never a successful (empty) answer.
    with pytest.raises(StreamInterrupted, match="0 chunk"):
        accumulate([])
    with pytest.raises(StreamInterrupted) as caught:
        accumulate([MessageDelta(content="Hel"), MessageDelta(content="lo")])
    error = caught.value
    assert (error.chunks, error.content_chars, error.finish_reason) == (2, 5, None)
