"""Evaluation in parallel: `concurrency` examples in flight at once, never more, the budget never
passed, and the same report and the same training run as serial for a deterministic model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from optim_task import GOOD, PARTIAL, Task, dataset, metric, student_reply

from promptimus.dto import Message
from promptimus.errors import InvalidArgument, MetricResultError
from promptimus.evals import evaluate
from promptimus.llms.scripted import ScriptedLLM
from promptimus.optim import Cost, FewShot, ProposalRequest, Reflective, fit

CHEAP = "In capitals: {text}"


class InFlight:
    """A deterministic student that counts the requests it is answering at once."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.llm = ScriptedLLM(self.reply, model_name="student")

    async def reply(self, history: list[Message], kwargs: dict[str, Any]) -> str:
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            for _ in range(3):  # let every other example that may start, start
                await asyncio.sleep(0)
            return student_reply(history, kwargs)
        finally:
            self.now -= 1


def comparable(report: Any) -> list[dict[str, Any]]:
    """The rows without their latency (seconds differ from run to run), traces included."""
    rows = []
    for row in report.rows:
        data = row.to_dict()
        data.pop("latency")
        data["trace"] = [vars(call) for call in row.trace.calls]
        rows.append(data)
    return rows


@pytest.mark.parametrize("concurrency", [2, 5, 12])
async def test_parallel_evaluation_gives_the_serial_report(concurrency: int) -> None:
    serial, parallel = InFlight(), InFlight()
    one = await evaluate(Task(serial.llm), dataset(), metric, concurrency=1, progress=False)
    many = await evaluate(
        Task(parallel.llm), dataset(), metric, concurrency=concurrency, progress=False
    )

    assert comparable(many) == comparable(one)
    assert many.score == one.score and many.usage == one.usage
    assert (serial.peak, parallel.peak) == (1, concurrency)


async def test_a_parallel_fit_is_the_serial_fit_and_never_passes_its_budget() -> None:
    async def run(concurrency: int) -> tuple[Any, InFlight]:
        student = InFlight()
        queue = [CHEAP, PARTIAL, GOOD]

        async def propose(request: ProposalRequest) -> str:
            return queue.pop(0) if queue else GOOD

        result = await fit(
            Task(student.llm),
            dataset(),
            objectives={"score": metric, "cost": Cost({"student": (1.0, 2.0)})},
            optimizer=Reflective(propose=propose, minibatch_size=4),
            budget=67,  # the last step cannot fit: it stops before, at 64
            concurrency=concurrency,
            progress=False,
        )
        assert len(student.llm.requests) == result.calls == 64
        return result, student

    serial, one = await run(1)
    parallel, many = await run(4)

    assert (one.peak, many.peak) == (1, 4)
    assert parallel.history == serial.history
    assert parallel.frontier == serial.frontier
    assert parallel.best_values == serial.best_values
    assert (parallel.usage, parallel.calls) == (serial.usage, serial.calls)
    # the run did something worth comparing: two kept, one turned down on its minibatch
    assert [e["accepted"] for e in serial.history] == [True, True, False, False, True]
    assert [p.candidate for p in serial.frontier] == [1, 2]


async def test_fewshot_in_parallel_spends_what_it_spends_serially() -> None:
    def demo_student(history: list[Message], kwargs: dict[str, Any]) -> str:
        word = history[0].content.rsplit(":", 1)[-1].strip()
        return word.upper() if len(history) > 1 else word

    results = []
    for concurrency in (1, 6):
        llm = ScriptedLLM(demo_student, model_name="student")
        result = await fit(
            Task(llm),
            dataset()[:6],
            metric,
            valset=dataset()[6:],
            optimizer=FewShot(k=2, candidates=3),
            budget=6 + 6 + 2 * 6 + 5,
            concurrency=concurrency,
            progress=False,
        )
        assert len(llm.requests) == result.calls == 24
        results.append(result)
    assert results[0].history == results[1].history


def labelling_student(flight: InFlight) -> ScriptedLLM:
    """Right (uppercase) when a demo shows a word of the same length, as in test_optim_few_shot:
    some demo sets validate better than others."""

    async def reply(history: list[Message], kwargs: dict[str, Any]) -> str:
        flight.now += 1
        flight.peak = max(flight.peak, flight.now)
        try:
            for _ in range(3):
                await asyncio.sleep(0)
            word = history[0].content.rsplit(":", 1)[-1].strip()
            shown = {len(m.content) for m in history[1:] if m.role == "user"}
            return word.upper() if word.isupper() or len(word) in shown else word
        finally:
            flight.now -= 1

    return ScriptedLLM(reply, model_name="student")


async def fewshot_run(parallel: int, concurrency: int, budget: int) -> tuple[Any, InFlight, Task]:
    flight = InFlight()
    llm = labelling_student(flight)
    task = Task(llm)
    result = await fit(
        task,
        dataset()[:6],
        objectives={"score": metric, "cost": Cost({"student": (1.0, 2.0)})},
        valset=dataset()[6:],
        optimizer=FewShot(k=1, candidates=5, min_score=0.0, seed=1, parallel=parallel),
        budget=budget,
        concurrency=concurrency,
        progress=False,
    )
    assert len(llm.requests) == result.calls <= budget
    return result, flight, task


async def test_fewshot_validates_candidates_in_parallel_as_it_would_one_by_one() -> None:
    serial, one, serial_task = await fewshot_run(parallel=1, concurrency=2, budget=100)
    parallel, many, parallel_task = await fewshot_run(parallel=3, concurrency=2, budget=100)

    # three candidate sets at once, each two examples at once
    assert (one.peak, many.peak) == (2, 6)
    assert parallel.history == serial.history
    assert parallel.frontier == serial.frontier
    assert parallel.calls == serial.calls == 6 + 6 + 5 * 6
    assert parallel_task.instr.demos.value == serial_task.instr.demos.value
    assert len({str(e["value"]) for e in serial.history if e.get("val_score") is not None}) > 2


async def test_fewshot_in_parallel_starts_only_the_candidates_the_budget_pays_for() -> None:
    # after the baseline and the bootstrap (12 calls), 20 pay for three candidates of 6, not four
    serial, _, _ = await fewshot_run(parallel=1, concurrency=4, budget=32)
    parallel, many, _ = await fewshot_run(parallel=4, concurrency=4, budget=32)

    assert parallel.calls == serial.calls == 12 + 3 * 6
    assert parallel.history == serial.history
    assert many.peak == 3 * 4


async def test_a_failing_metric_in_parallel_raises_its_own_error() -> None:
    def metric_that_breaks(example: Any, output: Message) -> float:
        return float("nan") if output.content == "INK" else 1.0  # only once a demo is shown

    with pytest.raises(MetricResultError, match="not finite"):
        await fit(
            Task(labelling_student(InFlight())),
            dataset()[:6],
            metric_that_breaks,
            valset=dataset()[6:],
            optimizer=FewShot(k=1, candidates=4, min_score=0.0, parallel=4),
            budget=100,
            progress=False,
        )


@pytest.mark.parametrize("bad", [0, -1, True, 2.0, "2"])
def test_fewshot_parallel_is_a_checked_count(bad: Any) -> None:
    with pytest.raises(InvalidArgument, match="FewShot parallel"):
        FewShot(parallel=bad)
