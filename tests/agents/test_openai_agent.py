"""OpenaiToolCallingAgent: native tool calls, error recovery, budgets, structured output, deps,
per-conversation state, run records, checkpoints — on ScriptedLLM and through the fake server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fake_llm import make_llm
from pydantic import BaseModel

from promptimus import Session
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.run_record import capture_records
from promptimus.dto import Message, MessageRole, Usage
from promptimus.errors import FailedToParseOutput, MaxIterExceeded, OutputTruncated
from promptimus.llms import ScriptedLLM
from promptimus.modules.memory import ResetMemoryContext
from promptimus.modules.structural import StructuralOutput
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools.run_context import RunContext
from promptimus.tools.tool import Tool

S = ScriptedLLM


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def explode() -> str:
    """Always fails."""
    raise RuntimeError("the tool broke")


def tool_messages(request: list[Message]) -> list[tuple[str | None, str]]:
    return [(m.tool_call_id, m.content) for m in request if m.role == MessageRole.TOOL]


class Weather(BaseModel):
    city: str
    celsius: float


# --- the basic loop -----------------------------------------------------------------------------


async def test_text_answer_uses_prompt_vars_and_is_remembered() -> None:
    llm = S(["Bonjour!", "Encore bonjour."])
    agent = OpenaiToolCallingAgent("Answer in {lang}.", [add]).with_llm(llm)

    reply = await agent("hi", lang="French")
    await agent("again", lang="French")

    assert isinstance(reply, Message) and reply.content == "Bonjour!"
    first, kwargs = llm.requests[0]
    assert [(m.role, m.content) for m in first] == [("system", "Answer in French."), ("user", "hi")]
    assert kwargs["tools"][0]["function"]["name"] == "add"
    second, _ = llm.requests[1]
    assert [m.content for m in second] == ["Answer in French.", "hi", "Bonjour!", "again"]


async def test_no_tools_sends_no_tools_option() -> None:
    llm = S(["ok"])
    await OpenaiToolCallingAgent("p", []).with_llm(llm)("hi")
    assert "tools" not in llm.requests[0][1]


async def test_parallel_calls_run_concurrently_and_answer_in_request_order() -> None:
    both_started = asyncio.Event()
    started: list[str] = []

    async def slow(tag: str) -> str:
        """Slow."""
        started.append(tag)
        if len(started) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 10)  # fails if run one after the other
        await asyncio.sleep(0.05)
        return f"slow {tag}"

    async def fast(tag: str) -> str:
        """Fast."""
        started.append(tag)
        if len(started) == 2:
            both_started.set()
        return f"fast {tag}"

    llm = S(
        [
            S.tool_calls(
                S.call("slow", {"tag": "A"}, id="c1"), S.call("fast", {"tag": "B"}, id="c2")
            ),
            "done",
        ]
    )
    agent = OpenaiToolCallingAgent("p", [slow, fast]).with_llm(llm)
    assert (await agent("go")).content == "done"
    assert tool_messages(llm.requests[1][0]) == [("c1", "slow A"), ("c2", "fast B")]


async def test_model_fixable_errors_go_back_to_the_model() -> None:
    llm = S(
        [
            S.tool_calls(
                S.call("add", '{"a": 1', id="bad_json"),
                S.call("add", {"a": "one", "b": 2}, id="invalid"),
                S.call("multiply", {"a": 1}, id="unknown"),
                S.call("explode", {}, id="raises"),
                S.call("add", {"a": 2, "b": 3}, id="good"),
            ),
            "recovered",
        ]
    )
    agent = OpenaiToolCallingAgent("p", [add, explode]).with_llm(llm)

    assert (await agent("go")).content == "recovered"

    results = dict(tool_messages(llm.requests[1][0]))
    assert results["good"] == "5"
    assert results["bad_json"].startswith("Error:") and "JSON" in results["bad_json"]
    assert results["invalid"].startswith("Error:") and "a" in results["invalid"]
    assert results["unknown"].startswith("Error:") and "multiply" in results["unknown"]
    assert "add" in results["unknown"]  # tells the model what exists
    assert results["raises"].startswith("Error:") and "the tool broke" in results["raises"]


async def test_max_steps_raises_with_the_messages_and_keeps_memory() -> None:
    llm = S([S.tool_call("add", {"a": 1, "b": 1}) for _ in range(3)])
    agent = OpenaiToolCallingAgent("p", [add], max_steps=3).with_llm(llm)

    with pytest.raises(MaxIterExceeded) as info:
        await agent("loop forever")

    messages = info.value.messages
    assert messages[0].content == "loop forever"
    assert [m.role for m in messages[1:]] == ["assistant", "tool"] * 3
    assert "max_steps" in str(info.value)
    assert len(llm.requests) == 3
    assert len(agent.memory) == 0  # a failed run changes nothing


# --- structured output --------------------------------------------------------------------------


async def test_structured_output_retries_with_the_validation_error() -> None:
    llm = S(
        [
            S.tool_call("add", {"a": 20, "b": 1}),
            '{"city": "Paris"}',
            '```json\n{"city": "Paris", "celsius": 21}\n```',
        ]
    )
    agent = OpenaiToolCallingAgent("p", [add], max_steps=2, structural_output=Weather)
    agent.with_llm(llm)

    result = await agent("weather?")

    assert result == Weather(city="Paris", celsius=21)
    # with tools, the answer is asked for as a tool (JSON text is taken too), not as a format
    kwargs = llm.requests[0][1]
    assert "response_format" not in kwargs
    assert [t["function"]["name"] for t in kwargs["tools"]] == ["add", "final_result"]
    retry = llm.requests[2][0][-1]
    assert retry.role == MessageRole.USER and "celsius" in retry.content
    # the retry did not use a step (max_steps=2: one tool step + one answer step), and the
    # rejected reply is not remembered
    remembered = [m.content for m in agent.memory.data]
    assert len(remembered) == 4 and remembered[-1].startswith("```json")
    assert '{"city": "Paris"}' not in remembered


async def test_structured_output_exhaustion_keeps_raw_replies() -> None:
    llm = S(["nope", '{"city": 1}', "still no"])
    output = StructuralOutput(Weather, n_retries=2)
    agent = OpenaiToolCallingAgent("p", [], structural_output=output).with_llm(llm)

    with pytest.raises(FailedToParseOutput) as info:
        await agent("weather?")

    assert info.value.raw == ["nope", '{"city": 1}', "still no"]
    assert len(info.value.errors) == 3
    assert "celsius" in info.value.errors[1]


async def test_structured_output_truncated_is_an_error_not_a_retry() -> None:
    llm = S([Message(role=MessageRole.ASSISTANT, content='{"city": "Par', finish_reason="length")])
    agent = OpenaiToolCallingAgent("p", [], structural_output=Weather).with_llm(llm)
    with pytest.raises(OutputTruncated, match="token"):
        await agent("weather?")
    assert len(llm.requests) == 1


async def test_prompted_structured_output_puts_the_schema_in_the_prompt() -> None:
    llm = S(['{"city": "Oslo", "celsius": -3}'])
    output = StructuralOutput(Weather, native=False)
    agent = OpenaiToolCallingAgent("p", [], structural_output=output).with_llm(llm)
    assert await agent("weather?") == Weather(city="Oslo", celsius=-3)
    sent, kwargs = llm.requests[0]
    assert "response_format" not in kwargs
    assert sent[1].role == MessageRole.SYSTEM and '"celsius"' in sent[1].content


# --- run context and dynamic prompts -------------------------------------------------------------


class Bank:
    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.balances = {"checking": 120.0}


async def test_deps_reach_tools_and_dynamic_prompt() -> None:
    seen: list[tuple[int, int]] = []

    def instructions(ctx: RunContext[Bank]) -> str:
        seen.append((ctx.step, len(ctx.messages)))
        return f"You serve {ctx.deps.owner}; this is step {ctx.step}."

    async def balance(ctx: RunContext[Bank], account: str) -> float:
        """Balance of an account."""
        assert ctx.tool_call_id == "b1"
        return ctx.deps.balances[account]

    llm = S([S.tool_call("balance", {"account": "checking"}, id="b1"), "You have 120."])
    agent = OpenaiToolCallingAgent(instructions, [balance]).with_llm(llm)

    await agent("balance?", deps=Bank("Ann"))

    assert [r[0][0].content for r in llm.requests] == [
        "You serve Ann; this is step 0.",
        "You serve Ann; this is step 1.",
    ]
    assert seen == [(0, 1), (1, 3)]
    assert tool_messages(llm.requests[1][0]) == [("b1", "120.0")]
    assert "ctx" not in json.dumps(llm.requests[0][1]["tools"])


async def test_async_dynamic_prompt() -> None:
    async def instructions(ctx: RunContext[str]) -> str:
        await asyncio.sleep(0)
        return f"hello {ctx.deps}"

    llm = S(["ok"])
    await OpenaiToolCallingAgent(instructions, []).with_llm(llm)("hi", deps="Bo")
    assert llm.requests[0][0][0].content == "hello Bo"


# --- conversations and concurrency ----------------------------------------------------------------


async def test_concurrent_conversations_through_one_agent_do_not_mix() -> None:
    async def reply(history: list[Message], kwargs: dict[str, Any]) -> Message | str:
        last = history[-1]
        if last.role == MessageRole.USER:
            await asyncio.sleep(0.01)
            return S.tool_call("add", {"a": len(history), "b": 0})
        users = [m.content for m in history if m.role == MessageRole.USER]
        return "I remember: " + " | ".join(users)

    agent = OpenaiToolCallingAgent("p", [add]).with_llm(S(reply))
    alice, bob = Session("alice"), Session("bob")

    async def talk(session: Session, name: str) -> list[str]:
        answers = []
        with session:
            for i in range(3):
                answers.append((await agent(f"{name} {i}")).content)
        return answers

    a, b = await asyncio.gather(talk(alice, "alice"), talk(bob, "bob"))

    assert a[-1] == "I remember: alice 0 | alice 1 | alice 2"
    assert b[-1] == "I remember: bob 0 | bob 1 | bob 2"
    with alice:
        assert len(agent.memory) == 12  # 3 x (user, tool request, tool result, answer)
    assert len(agent.memory) == 0  # the agent's own memory (outside sessions) is untouched


async def test_concurrent_runs_in_one_conversation_commit_whole_exchanges() -> None:
    async def reply(history: list[Message], kwargs: dict[str, Any]) -> Message | str:
        if history[-1].role == MessageRole.USER:
            await asyncio.sleep(0.02)
            return S.tool_call("add", {"a": 1, "b": 1})
        return "done"

    agent = OpenaiToolCallingAgent("p", [add]).with_llm(S(reply))
    await asyncio.gather(agent("one"), agent("two"))

    roles = [m.role.value for m in agent.memory.data]
    assert roles == ["user", "assistant", "tool", "assistant"] * 2


async def test_reset_memory_context_clears_the_agent() -> None:
    agent = OpenaiToolCallingAgent("p", []).with_llm(S(["a", "b"]))
    await agent("hi")
    assert len(agent.memory) == 2
    with ResetMemoryContext(agent):
        assert len(agent.memory) == 0


# --- run record, hooks, checkpoints -------------------------------------------------------------


async def test_run_returns_output_and_record_with_usage() -> None:
    llm = S(
        [
            S.tool_calls(("add", {"a": 1, "b": 2}), ("explode", {})),
            Message(role=MessageRole.ASSISTANT, content="3", usage=Usage(total_tokens=7)),
        ]
    )
    agent = OpenaiToolCallingAgent("p", [add, explode]).with_llm(llm)

    output, record = await agent.run("1+2?")

    assert output.content == "3" and record.output is output
    assert [s.index for s in record.steps] == [0, 1]
    first = record.steps[0]
    assert first.request[0].role == MessageRole.SYSTEM and first.request[1].content == "1+2?"
    assert [(c.name, c.result, c.error is not None) for c in first.tool_calls] == [
        ("add", "3", False),
        ("explode", None, True),
    ]
    assert all(c.duration_s >= 0 for c in first.tool_calls)
    step_tokens = first.reply.usage.total_tokens if first.reply.usage else 0
    assert record.usage.total_tokens == step_tokens + 7


async def test_capture_records_around_a_plain_call() -> None:
    agent = OpenaiToolCallingAgent("p", []).with_llm(S(["hey"]))
    with capture_records() as runs:
        await agent("hi")
    assert len(runs) == 1 and runs[0].output.content == "hey"


async def test_every_llm_call_goes_through_the_prompt_module() -> None:
    llm = S([S.tool_call("add", {"a": 1, "b": 1}), "2"])
    agent = OpenaiToolCallingAgent("p", [add]).with_llm(llm)
    seen: list[str] = []
    agent.predictor.prompt.register_forward_hook(lambda m, a, kw, out: seen.append(out.content))
    agent_calls: list[Any] = []
    agent.register_forward_hook(lambda m, a, kw, out: agent_calls.append(out))
    await agent("1+1")
    assert seen == ["", "2"]
    assert [o.content for o in agent_calls] == ["2"]


def test_checkpoint_round_trip(tmp_path: Path) -> None:
    tool = Tool(add)
    agent = OpenaiToolCallingAgent("Be brief.", [tool], structural_output=Weather)
    agent.predictor.prompt.prompt.value = 'Be "brief".\n'
    tool.description.value = "Adds numbers."
    path = tmp_path / "agent.toml"
    agent.save(path)

    fresh = OpenaiToolCallingAgent("other", [add], structural_output=Weather).load(path)

    assert fresh.predictor.prompt.prompt.value == 'Be "brief".\n'
    assert fresh.tools["add"].description.value == "Adds numbers."  # type: ignore[attr-defined]
    assert fresh.digest() == agent.digest()


# --- through the real SDK and the fake server ---------------------------------------------------


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    return fake_openai


async def test_tool_loop_over_http(srv: FakeOpenAIServer) -> None:
    srv.chat.script(
        Reply(
            tool_calls=[
                ToolCall("add", {"a": 2, "b": 3}, id="call_a"),
                ToolCall("add", '{"a": 2', id="call_b"),
            ]
        ),
        Reply(content="It is 5.", usage={"prompt_tokens": 30, "completion_tokens": 4}),
    )
    agent = OpenaiToolCallingAgent("Use tools.", [add]).with_llm(make_llm(srv))

    output, record = await agent.run("2+3?")

    assert output.content == "It is 5."
    second = srv.chat.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    assert "content" not in second[2]  # only tool calls: no `"content": null` to transform
    assert second[3] == {"role": "tool", "content": "5", "tool_call_id": "call_a"}
    assert second[4]["tool_call_id"] == "call_b" and second[4]["content"].startswith("Error:")
    assert srv.chat.requests[0]["tools"][0]["function"]["name"] == "add"
    assert record.usage.prompt_tokens >= 30 and len(record.steps) == 2


async def test_structured_output_over_http(srv: FakeOpenAIServer) -> None:
    srv.chat.script('{"city": "Rome"}', '{"city": "Rome", "celsius": 30}')
    agent = OpenaiToolCallingAgent("p", [], structural_output=Weather).with_llm(make_llm(srv))

    assert await agent("weather?") == Weather(city="Rome", celsius=30)
    fmt = srv.chat.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert "celsius" in srv.chat.requests[1]["messages"][-1]["content"]
