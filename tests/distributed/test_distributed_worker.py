"""The worker body of `RayRunner` and what travels to it, in this process (no Ray started):
the module crosses as bytes without its providers, setup's result is checked, parameter values
are loaded once per evaluation, and a refused metric result comes back as a message."""

from __future__ import annotations

from typing import Any

from optim_task import BASELINE, GOOD, Task, dataset, make_student, metric

from promptimus import Module
from promptimus.distributed.travel import function_bytes, module_bytes, providers_left_behind
from promptimus.distributed.worker import EvalWorker
from promptimus.evals import Example, evaluate
from promptimus.llms.scripted import ScriptedLLM

STUDENT = make_student()


def attach(module: Module) -> Module:
    return module.with_llm(STUDENT)


def returns_text(module: Module) -> str:
    return "done"


async def install(worker: EvalWorker, module: Module, setup: Any, scorer: Any = metric) -> Any:
    return await worker.install(
        module_bytes(module), function_bytes(setup, "setup"), function_bytes(scorer, "metric"), None
    )


async def test_the_module_travels_without_providers_and_setup_attaches_them() -> None:
    task = Task(ScriptedLLM(["never used"]))
    assert providers_left_behind(task) == ["llm of 'root'"]
    assert providers_left_behind(task.instr) == ["llm of a parent of 'root.instr'"]
    data = module_bytes(task)
    assert b"never used" not in data  # the provider (and anything it holds) stayed behind

    worker = EvalWorker()
    assert await install(worker, task, attach) is None
    data_rows = [(i, e) for i, e in enumerate(dataset())]
    result = await worker.run_batch(1, [task.state_dict()], data_rows, 4)
    local = await evaluate(Task(STUDENT), dataset(), metric, progress=False)
    assert [(r.output, r.score, r.usage) for r in result.rows] == [
        (r.output, r.score, r.usage) for r in local.rows
    ]


async def test_values_load_once_per_evaluation_version() -> None:
    task = Task(STUDENT)
    worker = EvalWorker()
    assert await install(worker, task, attach) is None
    rows = [(0, Example({"text": "fig"}, "FIG"))]
    good = {**task.state_dict(), "instr.prompt": GOOD}
    first = await worker.run_batch(1, [good], rows, 1)
    # same version: the values are not read again (a stale dict here would be ignored)
    again = await worker.run_batch(1, [task.state_dict()], rows, 1)
    later = await worker.run_batch(2, [task.state_dict()], rows, 1)
    assert [r.rows[0].score for r in (first, again, later)] == [1.0, 1.0, 0.0]
    assert task.instr.prompt.value == BASELINE  # the driver's module is never touched


async def test_setup_that_returns_something_else_is_named() -> None:
    worker = EvalWorker()
    failure = await install(worker, Task(STUDENT), returns_text)
    assert failure is not None and "setup returned a str" in failure
    assert "return the module (or None)" in failure


async def test_a_refused_metric_result_comes_back_as_its_message() -> None:
    worker = EvalWorker()
    assert await install(worker, Task(STUDENT), attach, scorer=lambda e, o: float("nan")) is None
    result = await worker.run_batch(1, [Task(STUDENT).state_dict()], [(0, dataset()[0])], 1)
    assert result.rows == [] and result.metric_error is not None
    assert "not finite" in result.metric_error
