"""Bad input to training fails with a named PromptimusError before any model call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from optim_task import BASELINE, GOOD, Task, dataset, fence, make_student, metric

from promptimus.errors import (
    BudgetTooSmall,
    EmptyTrainingData,
    InvalidArgument,
    MetricResultError,
    NothingToTrain,
    OptimizationError,
    PromptimusError,
)
from promptimus.llms.scripted import ScriptedLLM
from promptimus.optim import FewShot, Reflective, fit


def frozen_task(student: ScriptedLLM) -> Task:
    task = Task(student)
    task.requires_grad_(False)
    return task


@pytest.mark.parametrize(
    ("case", "error", "message"),
    [
        ("nothing trainable", NothingToTrain, "requires_grad"),
        ("empty trainset", EmptyTrainingData, "empty trainset"),
        ("empty valset", EmptyTrainingData, "empty valset"),
        ("budget too small", BudgetTooSmall, "at least 12"),
        ("resume without folder", InvalidArgument, "checkpoint_dir"),
    ],
)
async def test_bad_input_fails_before_any_model_call(
    case: str, error: type[PromptimusError], message: str
) -> None:
    student = make_student()
    teacher = ScriptedLLM([fence(GOOD)] * 5)
    task = frozen_task(student) if case == "nothing trainable" else Task(student)
    kwargs: dict[str, Any] = {"budget": 100}
    trainset = dataset()
    if case == "empty trainset":
        trainset = []
    if case == "empty valset":
        kwargs["valset"] = []
    if case == "budget too small":
        kwargs["budget"] = 11
    if case == "resume without folder":
        kwargs["resume"] = True
    with pytest.raises(error, match=message):
        await fit(
            task, trainset, metric, optimizer=Reflective(teacher=teacher), progress=False, **kwargs
        )
    assert student.requests == [] and teacher.requests == []
    assert "demos" not in task.instr._parameters


async def test_fewshot_refuses_a_tree_without_prompt_before_calling() -> None:
    student = make_student()
    with pytest.raises(NothingToTrain, match="no Prompt at 'nowhere'"):
        await fit(Task(student), dataset(), metric, optimizer=FewShot(prompt="nowhere"), budget=50)
    assert student.requests == []


async def test_a_metric_returning_a_non_number_stops_the_run(tmp_path: Path) -> None:
    student = make_student()
    with pytest.raises(MetricResultError, match="returned str"):
        await fit(
            Task(student),
            dataset(),
            lambda example, output: "yes",
            optimizer=Reflective(teacher=ScriptedLLM([])),
            budget=100,
            checkpoint_dir=tmp_path,
            progress=False,
        )
    # stopped at the first result: the calls already in flight (concurrency 8), no more
    assert len(student.requests) == 8
    assert not (tmp_path / "history.jsonl").exists()


def test_reflective_needs_one_proposer() -> None:
    with pytest.raises(InvalidArgument, match="exactly one"):
        Reflective()
    with pytest.raises(InvalidArgument, match="minibatch_size"):
        Reflective(teacher=ScriptedLLM([]), minibatch_size=0)


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        ({"optimizer": None}, InvalidArgument, "optimizer"),
        ({"optimizer": "reflective"}, InvalidArgument, "optimizer"),
        ({"trainset": None}, InvalidArgument, "trainset"),
        ({"valset": 5}, InvalidArgument, "valset"),
        ({"budget": float("nan")}, InvalidArgument, "Budget.calls"),
        ({"budget": "100"}, InvalidArgument, "Budget.calls"),
        ({"budget": 100.5}, InvalidArgument, "Budget.calls"),
    ],
    ids=repr,
)
async def test_arguments_of_the_wrong_kind_fail_before_any_model_call(
    change: dict[str, Any], error: type[PromptimusError], message: str
) -> None:
    student = make_student()
    teacher = ScriptedLLM([fence(GOOD)] * 5)
    kwargs: dict[str, Any] = {
        "trainset": dataset(),
        "optimizer": Reflective(teacher=teacher),
        "budget": 100,
        **change,
    }
    trainset = kwargs.pop("trainset")
    with pytest.raises(error, match=message):
        await fit(Task(student), trainset, metric, progress=False, **kwargs)
    assert student.requests == [] and teacher.requests == []


@pytest.mark.parametrize("where", ["the folder", "a parent"])
async def test_a_checkpoint_dir_that_is_a_file_fails_before_any_model_call(
    tmp_path: Path, where: str
) -> None:
    blocker = tmp_path / "runs"
    blocker.write_text("not a folder\n")
    folder = blocker if where == "the folder" else blocker / "1"
    student = make_student()
    with pytest.raises(OptimizationError, match="not a folder"):
        await fit(
            Task(student),
            dataset(),
            metric,
            optimizer=Reflective(teacher=ScriptedLLM([])),
            budget=100,
            checkpoint_dir=folder,
            progress=False,
        )
    assert student.requests == []
    assert blocker.read_text() == "not a folder\n"


@pytest.mark.parametrize("returned", [None, 7, b"bytes"], ids=repr)
@pytest.mark.parametrize("kind", ["async", "sync"])
async def test_a_proposer_returning_no_text_is_a_named_error(returned: Any, kind: str) -> None:
    async def propose_async(request: Any) -> Any:
        return returned

    def propose_sync(request: Any) -> Any:
        return returned

    propose = propose_async if kind == "async" else propose_sync
    task = Task(make_student())
    with pytest.raises(OptimizationError, match=rf"propose= returned {type(returned).__name__}"):
        await fit(
            task,
            dataset(),
            metric,
            optimizer=Reflective(propose=propose),  # type: ignore[arg-type]
            budget=100,
            progress=False,
        )
    assert task.instr.prompt.value == BASELINE


async def test_a_sync_proposer_returning_text_is_used() -> None:
    task = Task(make_student())
    result = await fit(
        task,
        dataset(),
        metric,
        optimizer=Reflective(propose=lambda request: GOOD),
        budget=100,
        progress=False,
    )
    assert result.best_score == 1.0 and task.instr.prompt.value == GOOD


def test_a_proposer_that_is_not_callable_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="propose"):
        Reflective(propose="improve it")  # type: ignore[arg-type]
