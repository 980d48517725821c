"""`evaluate`: the concurrency bound, a Session per example, error rows, metric refusal, usage,
the call counter, and the report (table, HTML, JSONL, progress bar)."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptimus import Module
from promptimus.dto import Message, MessageRole
from promptimus.errors import (
    CallBudgetExceeded,
    EmptyDataset,
    InvalidArgument,
    MetricResultError,
)
from promptimus.evals import (
    CallCounter,
    Dataset,
    EvalReport,
    Example,
    Score,
    evaluate,
    exact_match,
    progress,
)
from promptimus.llms import OpenAILike
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules import MemoryModule
from promptimus.testing import FakeOpenAIServer
from promptimus.transport.retry import RetryPolicy

BOUND = 30  # seconds; generous, so a regression fails instead of hanging


def data(n: int) -> Dataset:
    return Dataset.from_records(
        {"inputs": {"history": f"q{i}"}, "expected": f"answer q{i}", "id": i} for i in range(n)
    )


async def run(*args: Any, **kwargs: Any) -> EvalReport:
    kwargs.setdefault("progress", False)
    return await asyncio.wait_for(evaluate(*args, **kwargs), BOUND)


class Gate(Module):
    """Counts calls in flight; each call stays open until `enough` are in flight at once or
    every example has started, so a run that exceeded the bound would show it."""

    def __init__(self, total: int, enough: int) -> None:
        super().__init__()
        self._total, self._enough = total, enough
        self._started = 0
        self._open = asyncio.Event()
        self.in_flight = 0
        self.max_in_flight = 0

    async def forward(self, history: str) -> str:
        self._started += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.in_flight >= self._enough or self._started >= self._total:
                self._open.set()
            await asyncio.wait_for(self._open.wait(), BOUND)
            for _ in range(5):  # stay open a few turns: a call over the bound would start now
                await asyncio.sleep(0)
            return f"answer {history}"
        finally:
            self.in_flight -= 1


async def test_at_most_concurrency_calls_run_at_once() -> None:
    module = Gate(total=12, enough=3)
    report = await run(module, data(12), exact_match, concurrency=3)
    assert module.max_in_flight == 3
    assert report.score == 1.0
    assert [row.example.metadata["id"] for row in report.rows] == list(range(12))  # order kept


async def test_calls_do_overlap_up_to_the_bound() -> None:
    module = Gate(total=5, enough=5)
    await run(module, data(5), exact_match, concurrency=8)
    assert module.max_in_flight == 5  # nothing serialises the calls below the bound


def counting_replies(history: list[Message], kwargs: dict[str, Any]) -> str:
    users = [m.content for m in history if m.role == MessageRole.USER]
    return f"answer {users[-1]}" if len(users) == 1 else f"saw {users}"


async def test_each_example_runs_in_its_own_session() -> None:
    llm = ScriptedLLM(counting_replies)
    memory = MemoryModule(memory_size=50, system_prompt="Answer.").with_llm(llm)
    report = await run(memory, data(20), exact_match, concurrency=4)
    # A leak would put another example's question into the history: the reply would say so.
    assert report.score == 1.0, [r.output.content for r in report.rows if r.score < 1]
    assert all(len([m for m in h if m.role == MessageRole.USER]) == 1 for h, _ in llm.requests)
    assert list(memory.memory.data) == []  # the module's own (session-less) memory stayed empty


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def fake_llm(srv: FakeOpenAIServer) -> OpenAILike:
    retry = RetryPolicy(max_retries=1, base_delay=0.001, max_delay=0.01)
    return OpenAILike("fake-model", api_key=srv.api_key, base_url=srv.base_url, retry=retry)


async def test_over_http_the_server_sees_the_bound_and_no_shared_history(
    srv: FakeOpenAIServer,
) -> None:
    total = 9

    async def respond(body: dict[str, Any]) -> str:
        async def overlap() -> None:
            while srv.in_flight < 3 and len(srv.chat.requests) < total:  # noqa: ASYNC110
                await asyncio.sleep(0.002)

        await asyncio.wait_for(overlap(), BOUND)
        await asyncio.sleep(0.02)  # stay open: a request over the bound would arrive now
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        return f"answer {users[-1]}" if len(users) == 1 else f"saw {users}"

    srv.chat.respond_with(respond)
    module = MemoryModule(memory_size=50, system_prompt="Answer.").with_llm(fake_llm(srv))
    report = await run(module, data(total), exact_match, concurrency=3)
    assert srv.max_in_flight == 3
    assert report.score == 1.0
    assert report.usage.requests == total
    assert report.usage.total_tokens == sum(r.usage.total_tokens for r in report.rows) > 0


class Flaky(Module):
    async def forward(self, history: str) -> str:
        if history in ("q1", "q3"):
            raise RuntimeError(f"boom on {history}")
        return f"answer {history}"


async def test_an_exception_is_a_row_and_the_run_goes_on() -> None:
    report = await run(Flaky(), data(5), exact_match)
    assert report.scores == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert report.score == pytest.approx(0.6)
    assert [r.error for r in report.errors] == [
        "RuntimeError: boom on q1",
        "RuntimeError: boom on q3",
    ]
    assert report.rows[1].output is None and "boom on q1" in report.rows[1].feedback


class FansOut(Module):
    async def forward(self, history: str) -> str:
        async with asyncio.TaskGroup() as group:
            group.create_task(Flaky().forward("q1"))
        return "never"


async def test_a_failed_task_group_is_reported_by_what_failed_in_it() -> None:
    report = await run(FansOut(), data(1), exact_match)
    assert [r.error for r in report.errors] == ["RuntimeError: boom on q1"]


async def test_a_metric_that_raises_is_a_row_too() -> None:
    def picky(example: Example, output: Any) -> float:
        if example.metadata["id"] == 2:
            raise KeyError("no such label")
        return 1.0

    report = await run(Flaky(), data(3)[:1] + data(3)[2:], picky)
    assert report.scores == [1.0, 0.0]
    assert report.rows[1].error == "metric: KeyError: 'no such label'"
    assert report.rows[1].output == "answer q2"  # the module's output is kept


class Counting(Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def forward(self, history: str) -> str:
        self.calls += 1
        await asyncio.sleep(0)
        return f"answer {history}"


@pytest.mark.parametrize("bad", ["1.0", None, float("nan")])
async def test_a_metric_returning_a_non_number_stops_the_run(bad: object) -> None:
    module = Counting()

    def labels(example: Example, output: Any) -> Any:
        return bad

    with pytest.raises(MetricResultError, match="labels returned"):
        await run(module, data(50), labels, concurrency=2)
    assert module.calls <= 3  # stopped at the first result, not after all 50


async def test_async_metrics_and_scores_with_feedback() -> None:
    async def judged(example: Example, output: Any) -> Score:
        await asyncio.sleep(0)
        return Score(0.5, f"half for {output}")

    report = await run(Counting(), data(2), judged)
    assert report.score == 0.5
    assert report.rows[0].feedback == "half for answer q0"


async def test_a_list_of_examples_and_scores_in_row_order() -> None:
    subset = [data(6)[i] for i in (4, 1, 5)]
    report = await run(Flaky(), subset, exact_match)
    assert report.scores == [1.0, 0.0, 1.0]
    assert [r.inputs for r in report.rows] == [
        {"history": "q4"},
        {"history": "q1"},
        {"history": "q5"},
    ]


async def test_the_call_counter_counts_and_refuses_before_calling() -> None:
    module = Counting()
    counter = CallCounter(max_calls=10)
    await run(module, data(6), exact_match, counter=counter)
    assert (counter.calls, counter.remaining, module.calls) == (6, 4, 6)
    with pytest.raises(CallBudgetExceeded, match=r"needs 5 module calls.*4 of 10 left"):
        await run(module, data(5), exact_match, counter=counter)
    assert (counter.calls, module.calls) == (6, 6)  # nothing spent on the refused run
    await run(module, data(4), exact_match, counter=counter)
    assert counter.remaining == 0


async def test_an_empty_dataset_is_refused() -> None:
    with pytest.raises(EmptyDataset):
        await run(Counting(), Dataset(), exact_match)


@pytest.mark.parametrize("bad", [None, 3, "qa.jsonl"], ids=repr)
async def test_a_dataset_that_is_not_a_sequence_of_examples_is_refused(bad: object) -> None:
    module = Counting()
    with pytest.raises(InvalidArgument, match="dataset"):
        await run(module, bad, exact_match)
    assert module.calls == 0


async def test_a_metric_score_above_one_stops_the_run() -> None:
    module = Counting()
    with pytest.raises(MetricResultError, match="between 0 and 1"):
        await run(module, data(50), lambda example, output: 5.0, concurrency=2)
    assert module.calls <= 3


async def test_usage_per_row_counts_the_modules_replies_not_the_metrics() -> None:
    llm = ScriptedLLM(counting_replies)
    judge_llm = ScriptedLLM(lambda history, kwargs: '{"score": 1, "feedback": "fine"}')
    from promptimus.evals import LLMJudge

    judge = LLMJudge().with_llm(judge_llm)
    module = MemoryModule(system_prompt="Answer.").with_llm(llm)
    report = await run(module, data(3), judge)
    assert report.score == 1.0
    assert [r.usage.requests for r in report.rows] == [1, 1, 1]
    # ScriptedLLM estimates one token per word: "Answer." + "q0" in, "answer q0" out
    assert report.rows[0].usage.prompt_tokens == 2 and report.rows[0].usage.completion_tokens == 2
    assert report.usage.requests == 3 and report.usage.total_tokens == 12
    assert report.metric_usage.requests == 3 and report.metric_usage.total_tokens > 0


async def test_the_report_reads_as_a_table_html_and_jsonl(tmp_path: Path) -> None:
    data_ = Dataset.from_records(
        [
            {"inputs": {"history": "q0"}, "expected": "answer q0"},
            {"inputs": {"history": "<script>alert(1)</script>"}, "expected": "x"},
            {"inputs": {"history": "q1"}, "expected": "answer q1"},
        ]
    )
    report = await run(Flaky(), data_, exact_match)
    assert repr(report) == (
        "<EvalReport: score 0.333 over 3 examples, 1 error; 0 requests, 0 tokens>"
    )
    text = str(report)
    assert text.splitlines()[0] == (
        "EvalReport: score 0.333 over 3 examples, 1 error; 0 requests, 0 tokens"
    )
    assert "ERROR RuntimeError: boom on q1" in text
    assert "answer <script>alert(1)</script>" in text  # the output column
    assert "expected 'x', got 'answer <script>alert(1)</scr…" in text  # long cells are cut
    page = report._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and "<table>" in page
    path = tmp_path / "report.jsonl"
    report.to_jsonl(path)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["score"] for r in rows] == [1.0, 0.0, 0.0]
    assert rows[2]["error"] == "RuntimeError: boom on q1"
    assert set(rows[0]) == {
        "inputs", "expected", "output", "score", "feedback", "error", "latency", "usage", "metadata"
    }  # fmt: skip
    assert rows[0]["usage"]["requests"] == 0 and rows[0]["latency"] >= 0


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_a_progress_bar_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    await run(Counting(), data(4), exact_match, progress=True)
    assert "4/4" in terminal.getvalue() and "score=1.000" in terminal.getvalue()


async def test_no_bar_off_a_terminal_or_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = io.StringIO()
    monkeypatch.setattr(sys, "stderr", plain)
    await run(Counting(), data(2), exact_match, progress=True)
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    await run(Counting(), data(2), exact_match, progress=False)
    assert plain.getvalue() == terminal.getvalue() == ""


async def test_without_tqdm_the_run_works_without_a_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "tqdm" or m.startswith("tqdm.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm now raises ImportError
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setattr(progress, "_warned", False)
    report = await run(Counting(), data(3), exact_match, progress=True)
    hint = "promptimus: install tqdm (pip install 'promptimus[evals]') to see a progress bar\n"
    assert report.score == 1.0 and terminal.getvalue() == hint  # one line, no bar
    await run(Counting(), data(3), exact_match, progress=True)
    assert terminal.getvalue() == hint  # said once per process


async def test_an_agents_usage_counts_every_step_and_its_memory_stays_per_example() -> None:
    from promptimus.agents import OpenaiToolCallingAgent

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    def script(history: list[Message], kwargs: dict[str, Any]) -> Message | str:
        users = [m for m in history if m.role == MessageRole.USER]
        if len(users) != 1:
            return f"saw {len(users)} requests"
        if history[-1].role == MessageRole.TOOL:
            return history[-1].content
        return ScriptedLLM.tool_call("add", {"a": 1, "b": int(users[0].content)})

    llm = ScriptedLLM(script)
    agent = OpenaiToolCallingAgent("You add.", tools=[add]).with_llm(llm)
    examples = Dataset.from_records(
        {"inputs": {"request": str(i)}, "expected": str(i + 1)} for i in range(6)
    )
    report = await run(agent, examples, exact_match, concurrency=3)
    assert report.score == 1.0, repr(report)
    assert [r.usage.requests for r in report.rows] == [2] * 6  # the tool call and the answer
    assert report.usage.requests == len(llm.requests) == 12


async def test_plain_functions_evaluate_too() -> None:
    def upper(history: str) -> str:
        return f"answer {history}"

    async def lower(history: str) -> str:
        return f"answer {history}"

    assert (await run(upper, data(2), exact_match)).score == 1.0
    assert (await run(lower, data(2), exact_match)).score == 1.0
