"""An evaluated example's trace holds its whole run: every module call by path with what it was
given and gave, the tool calls and their results, each guardrail's verdict, and the LLM usage
of each call, from a real agent run through the official SDK and the fake OpenAI server. What
a guardrail redacted is recorded as it left it."""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import pytest

from promptimus import Module
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.evals import Example, RunTrace, evaluate
from promptimus.guardrails import InputGuardrail, OutputGuardrail, ToolGuardrail, Verdict
from promptimus.llms import OpenAILike
from promptimus.modules.prompt import Prompt
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def redact(text: str) -> Verdict:
    return Verdict.replace(text.replace("hunter2", "[redacted]"))


def small_numbers(name: str, arguments: dict[str, int]) -> Verdict | None:
    if max(arguments.values()) > 100:
        return Verdict.block("numbers over 100 are refused")
    return None


async def traced_run(srv: FakeOpenAIServer) -> RunTrace:
    srv.chat.script(
        Reply(
            tool_calls=[ToolCall("add", {"a": 2, "b": 3}), ToolCall("add", {"a": 500, "b": 1})],
            usage={"prompt_tokens": 30, "completion_tokens": 7, "total_tokens": 37},
        ),
        Reply("The sum is 5", usage={"prompt_tokens": 50, "completion_tokens": 4}),
    )
    llm = OpenAILike("m", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)
    agent = OpenaiToolCallingAgent(
        "Do the sums.",
        [add],
        guardrails=[
            InputGuardrail(redact, name="no_passwords"),
            ToolGuardrail(small_numbers, name="small_numbers"),
            OutputGuardrail(lambda text: None, name="anything"),
        ],
    ).with_llm(llm)
    example = Example({"request": "add 2 and 3, my password is hunter2"}, "5")
    report = await evaluate(agent, [example], lambda e, o: 1.0, progress=False)
    trace = report.rows[0].trace
    assert trace is not None
    return trace


async def test_tool_calls_and_their_results_are_in_the_trace(srv: FakeOpenAIServer) -> None:
    trace = await traced_run(srv)
    tools = [call for call in trace.calls if call.kind == "tool"]
    assert [(call.name, call.inputs, call.output) for call in tools] == [("add", "a=2, b=3", "5")]
    assert tools[0].path == "root.tools.add"
    # the model's request for them is the predictor's output
    (first, second) = [call for call in trace.calls if call.path == "root.predictor.prompt"]
    assert 'add({"a": 2, "b": 3})' in first.output and 'add({"a": 500, "b": 1})' in first.output
    # and what came back reaches the next request
    assert "tool add: '5'" in second.inputs
    assert "numbers over 100 are refused" in second.inputs
    assert second.output == "'The sum is 5'"


async def test_every_guardrail_verdict_is_in_the_trace(srv: FakeOpenAIServer) -> None:
    trace = await traced_run(srv)
    verdicts = [(call.name, call.output) for call in trace.calls if call.kind == "guardrail"]
    assert verdicts == [
        ("no_passwords", "replace: 'add 2 and 3, my password is [redacted]'"),
        ("small_numbers", "allow"),
        ("small_numbers", "block: numbers over 100 are refused"),
        ("anything", "allow"),
    ]
    rendered = trace.render()
    assert "[input guardrail 'no_passwords']" in rendered
    assert "-> block: numbers over 100 are refused" in rendered


async def test_what_a_guardrail_redacted_is_kept_nowhere_in_the_trace(
    srv: FakeOpenAIServer,
) -> None:
    trace = await traced_run(srv)
    assert "hunter2" not in trace.render(max_tokens=100_000)
    assert all("hunter2" not in call.inputs + call.output for call in trace.calls)
    (root,) = [call for call in trace.calls if call.path == "root"]
    assert "my password is [redacted]" in root.inputs


async def test_each_call_carries_the_usage_of_its_own_requests(srv: FakeOpenAIServer) -> None:
    trace = await traced_run(srv)
    first, second = [call for call in trace.calls if call.path == "root.predictor.prompt"]
    assert (first.usage.requests, first.usage.total_tokens) == (1, 37)
    assert (second.usage.requests, second.usage.prompt_tokens) == (1, 50)
    # calls that sent no request of their own count none
    assert all(c.usage.requests == 0 for c in trace.calls if c.kind in ("tool", "guardrail"))
    assert "1 request, 37 tokens" in first.render()


class Leaky(Module):
    """Calls its model, then fails with a message quoting the key (as some servers' errors do)."""

    def __init__(self, key: str) -> None:
        super().__init__()
        self.answer = Prompt("Answer: {text}")
        self._key = key

    async def forward(self, text: str) -> str:
        await self.answer(text=text)
        raise RuntimeError(f"the server refused key {self._key}")


async def test_the_trace_holds_no_api_key(srv: FakeOpenAIServer) -> None:
    srv.chat.script("ok")
    llm = OpenAILike("m", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)
    report = await evaluate(
        Leaky(srv.api_key).with_llm(llm),
        [Example({"text": "hi"}, "x")],
        lambda e, o: 1.0,
        progress=False,
    )
    trace = report.rows[0].trace
    assert trace is not None and trace.calls[-1].error is not None
    assert "the server refused key [secret]" in trace.calls[-1].error
    assert srv.api_key not in trace.render(max_tokens=100_000)
    assert srv.api_key.encode() not in pickle.dumps(report.rows[0])  # as a row travels back
    assert report.rows[0].error == "RuntimeError: the server refused key [secret]"
