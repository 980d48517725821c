"""The runner seam of `evaluate` and `fit`: what a runner is handed, when it may refuse (before
any call is counted), and that the default runner is the in-process one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from optim_task import BASELINE, Task, dataset, make_student, metric

from promptimus.errors import CallBudgetExceeded, InvalidArgument, PromptimusError
from promptimus.evals import (
    CallCounter,
    EvalJob,
    EvalReport,
    EvalRow,
    InProcessRunner,
    Runner,
    evaluate,
)
from promptimus.optim import FewShot, fit


class Refusing(PromptimusError):
    pass


class RecordingRunner:
    """Runs in process, and remembers what it was asked; `refuse` makes `prepare` raise."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.prepared: list[EvalJob] = []
        self.rows_told = 0

    async def prepare(self, job: EvalJob) -> None:
        self.prepared.append(job)
        if self.refuse:
            raise Refusing("the workers are not there")

    async def run(self, job: EvalJob, on_row: Callable[[EvalRow], None]) -> EvalReport:
        def tell(row: EvalRow) -> None:
            self.rows_told += 1
            on_row(row)

        return await InProcessRunner().run(job, tell)


async def test_a_runner_gets_the_checked_job_and_gives_the_in_process_report() -> None:
    runner = RecordingRunner()
    assert isinstance(runner, Runner) and isinstance(InProcessRunner(), Runner)
    data = dataset()
    task = Task(make_student())
    mine = await evaluate(task, data, metric, runner=runner, concurrency=3, progress=False)
    default = await evaluate(task, data, metric, concurrency=3, progress=False)

    (job,) = runner.prepared
    assert (job.module, job.examples, job.metric, job.concurrency) == (task, data, metric, 3)
    assert runner.rows_told == len(data)
    assert [(r.example, r.output, r.score, r.feedback, r.error) for r in mine.rows] == [
        (r.example, r.output, r.score, r.feedback, r.error) for r in default.rows
    ]
    assert mine.usage == default.usage and mine.usage.requests == len(data)


async def test_a_runner_that_refuses_in_prepare_spends_nothing() -> None:
    student = make_student()
    counter = CallCounter(max_calls=100)
    with pytest.raises(Refusing):
        await evaluate(
            Task(student), dataset(), metric, runner=RecordingRunner(refuse=True), counter=counter
        )
    assert counter.calls == 0 and student.calls == []


async def test_a_budget_that_cannot_pay_is_refused_before_the_runner_prepares() -> None:
    runner = RecordingRunner()
    with pytest.raises(CallBudgetExceeded):
        task = Task(make_student())
        await evaluate(task, dataset(), metric, runner=runner, counter=CallCounter(3))
    assert runner.prepared == []


@pytest.mark.parametrize("runner", [object(), "ray"])
async def test_something_else_as_a_runner_is_refused_naming_it(runner: Any) -> None:
    with pytest.raises(InvalidArgument, match="runner must be a runner"):
        await evaluate(Task(make_student()), dataset(), metric, runner=runner)


async def test_fit_refuses_a_bad_runner_before_touching_the_module() -> None:
    task = Task(make_student())
    before = task.state_dict()
    with pytest.raises(InvalidArgument, match="runner must be a runner"):
        await fit(task, dataset(), metric, optimizer=FewShot(k=2), budget=50, runner=object())
    # FewShot would have added its `demos` Parameter when attached
    assert task.state_dict() == before and task.instr.prompt.value == BASELINE


async def test_a_runner_class_instead_of_an_instance_is_refused_saying_so() -> None:
    with pytest.raises(InvalidArgument, match=r"the class InProcessRunner: write InProcessRunner"):
        await evaluate(Task(make_student()), dataset(), metric, runner=InProcessRunner)
