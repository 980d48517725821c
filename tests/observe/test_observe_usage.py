"""One usage path: evaluation totals, training's token count and `track_usage` read the same
aggregate (`promptimus.observe.usage`), so a streamed agent run is counted by all of them."""

from __future__ import annotations

import asyncio

import promptimus as pm
from promptimus import Module
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.agents.events import FinalResult
from promptimus.evals import Dataset, evaluate, exact_match
from promptimus.llms import OpenAILike
from promptimus.optim import Budget
from promptimus.optim.counted_evaluation import CountedEvaluator
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall

BOUND = 30  # seconds; generous, so a regression fails instead of hanging


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Streamed(Module):
    """Answers by streaming its agent's run and returning the final text."""

    def __init__(self, llm: OpenAILike) -> None:
        super().__init__()
        self.agent = OpenaiToolCallingAgent("You add.", [add]).with_llm(llm)

    async def forward(self, request: str) -> str:
        final = None
        async for event in self.agent.stream(request):
            if isinstance(event, FinalResult):
                final = event
        assert final is not None, "the stream ended without a FinalResult"
        return final.output.content


def script(server: FakeOpenAIServer) -> None:
    server.chat.script(
        Reply(
            tool_calls=[ToolCall("add", {"a": 2, "b": 2})],
            usage={"prompt_tokens": 10, "completion_tokens": 5},
        ),
        Reply("4", usage={"prompt_tokens": 20, "completion_tokens": 4}),
    )


EXAMPLES = Dataset.from_records([{"inputs": {"request": "2+2?"}, "expected": "4"}])


async def test_evaluation_counts_a_streamed_run_as_track_usage_does() -> None:
    with FakeOpenAIServer() as server:
        script(server)
        llm = OpenAILike("fake-model", api_key=server.api_key, base_url=server.base_url)
        with pm.track_usage() as tracked:
            report = await asyncio.wait_for(
                evaluate(Streamed(llm), EXAMPLES, exact_match, progress=False), BOUND
            )

    assert report.score == 1.0, repr(report)
    usage = report.rows[0].usage
    assert (usage.requests, usage.prompt_tokens, usage.completion_tokens) == (2, 30, 9)
    assert usage.total_tokens == tracked.total.total_tokens == 39
    assert report.usage.requests == tracked.total.requests == 2


async def test_trainings_token_count_sees_a_streamed_run() -> None:
    with FakeOpenAIServer() as server:
        script(server)
        llm = OpenAILike("fake-model", api_key=server.api_key, base_url=server.base_url)
        evaluator = CountedEvaluator(Streamed(llm), exact_match, Budget(calls=5, max_tokens=30))
        evaluation = await asyncio.wait_for(evaluator.run(list(EXAMPLES)), BOUND)

    assert evaluation.score == 1.0
    assert evaluator.usage.total_tokens == 39
    assert not evaluator.can_afford(1)  # the 30-token limit is spent by the streamed run
