"""Reflective + fit: accept what the validation set proves better, revert the rest, never pass
the budget, checkpoint and resume, and replay identically with the same seed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from optim_task import (
    BASELINE,
    GOOD,
    PARTIAL,
    SECRET,
    SILENT,
    Task,
    dataset,
    fence,
    make_student,
    metric,
)

from promptimus.errors import OptimizationError
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules.prompt import Prompt
from promptimus.optim import Budget, ProposalRequest, Reflective, fit
from promptimus.optim.proposer import extract_value
from promptimus.optim.template_check import template_break


def proposer(*values: str):
    seen: list[ProposalRequest] = []
    values_iter = iter(values)

    async def propose(request: ProposalRequest) -> str:
        seen.append(request)
        return next(values_iter)

    return propose, seen


async def test_a_teacher_proposal_that_helps_is_accepted_and_saved(tmp_path: Path) -> None:
    student = make_student()
    teacher = ScriptedLLM([fence(GOOD)] * 20, model_name="teacher")
    task = Task(student)
    train, val = dataset()[:8], dataset()[8:]

    result = await fit(
        task,
        train,
        metric,
        optimizer=Reflective(teacher=teacher, minibatch_size=4),
        valset=val,
        budget=30,
        checkpoint_dir=tmp_path,
        progress=False,
    )

    assert result.baseline_score == 0.25  # only KIT, already uppercase, was right
    assert result.best_score == 1.0
    assert task.instr.prompt.value == GOOD
    accepted = [e for e in result.history if e["accepted"] and e["reason"] != "baseline"]
    assert [e["value"] for e in accepted] == [GOOD]
    assert accepted[0]["path"] == "instr.prompt"
    # the teacher saw the failing rows and their feedback, and the fenced text became the value
    asked = teacher.requests[0][0][0].content
    assert "answers must be uppercase" in asked and BASELINE in asked
    # best.toml is an ordinary checkpoint: a fresh tree loads it
    fresh = Task(make_student()).load(result.checkpoint_path)
    assert fresh.instr.prompt.value == GOOD
    lines = (tmp_path / "history.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == result.history


async def test_a_worse_candidate_is_reverted() -> None:
    student = make_student()
    propose, seen = proposer(*[SILENT] * 10)
    task = Task(student)

    result = await fit(
        task,
        dataset(),
        metric,
        optimizer=Reflective(propose=propose, minibatch_size=4),
        budget=12 + 3 * 8,
        progress=False,
    )

    assert seen, "the proposer was asked"
    assert task.instr.prompt.value == BASELINE
    assert result.best_score == result.baseline_score == 4 / 12
    tried = [e for e in result.history if e["value"] == SILENT]
    assert tried and all(not e["accepted"] for e in tried)
    assert all(e["reason"].startswith("not better on minibatch: ") for e in tried)


async def test_frozen_parameters_are_never_shown_nor_changed() -> None:
    teacher = ScriptedLLM([fence(GOOD)] * 20, model_name="teacher")
    task = Task(make_student())
    task.note.value = SECRET

    result = await fit(
        task, dataset(), metric, optimizer=Reflective(teacher=teacher), budget=40, progress=False
    )

    assert result.best_score == 1.0
    assert task.note.value == SECRET
    assert {e["path"] for e in result.history} <= {None, "instr.prompt"}
    sent = [m.content for history, _ in teacher.requests for m in history]
    assert sent and not any(SECRET in text for text in sent)
    assert "role" not in Reflective(teacher=teacher).attach(task).parameters()


async def test_a_template_breaking_candidate_costs_no_module_call() -> None:
    student = make_student()
    propose, seen = proposer("Repeat the word in uppercase: {word}", "Uppercase it.")
    task = Task(student)
    train = dataset()[:4]

    opt = Reflective(propose=propose).attach(task)
    rows = [object()]
    dropped_and_added = await opt.propose(rows)
    dropped = await opt.propose(rows)
    assert dropped_and_added.rejected == "template variables changed: drops {text}; adds {word}"
    assert dropped.rejected == "template variables changed: drops {text}"
    with pytest.raises(Exception, match="rejected"):
        opt.apply(dropped)
    assert student.requests == []  # the proposer was asked, the module never called

    propose, seen = proposer(*["Uppercase: {text} {extra}"] * 10)
    result = await fit(
        task,
        train,
        metric,
        optimizer=Reflective(propose=propose, minibatch_size=4),
        budget=24,  # a step starts only if it could pay for its minibatch twice (8)
        progress=False,
    )
    rejected = [e for e in result.history if e["reason"].startswith("template")]
    assert len(rejected) == len(seen) == 4
    # each step paid only for its minibatch before the proposal; never for the candidate
    assert len(student.requests) == result.calls == 4 + 4 * 4


@pytest.mark.parametrize("budget", [12, 13, 15, 16, 19, 20, 27, 33, 40])
async def test_the_budget_is_never_exceeded(budget: int) -> None:
    student = make_student()
    # helps on the minibatch, never beats a perfect validation: exercises every kind of step
    propose, _ = proposer(*[GOOD, SILENT] * 50)
    task = Task(student)
    result = await fit(
        task,
        dataset(),
        metric,
        optimizer=Reflective(propose=propose, minibatch_size=3),
        budget=budget,
        progress=False,
    )
    assert len(student.requests) == result.calls <= budget
    assert result.history[-1]["calls"] == result.calls


async def test_a_token_limit_stops_the_run() -> None:
    student = make_student()
    propose, _ = proposer(*[SILENT] * 50)
    result = await fit(
        Task(student),
        dataset(),
        metric,
        optimizer=Reflective(propose=propose),
        budget=Budget(calls=1000, max_tokens=1),
        progress=False,
    )
    assert result.calls == 12  # the baseline spent the tokens; nothing after it
    assert result.usage.total_tokens > 1


# the teacher's reply is picked by its prompt's length modulo MOD: an arbitrary but fixed choice
# under which a 36-call run keeps a new best and stops before the 60-call run does
MOD = 5


async def run_for(budget: int, folder: Path | None = None, resume: bool = False):
    # the reply depends only on what the teacher is asked, so a resumed run gets the same ones
    choices = [fence(SILENT), fence(PARTIAL), fence("Say {text}"), fence(GOOD)]
    teacher = ScriptedLLM(lambda history, kw: choices[len(history[0].content) % MOD % 4])
    task = Task(make_student())
    result = await fit(
        task,
        dataset()[:8],
        metric,
        optimizer=Reflective(teacher=teacher, minibatch_size=2, seed=7),
        valset=dataset()[4:],
        budget=budget,
        checkpoint_dir=folder,
        resume=resume,
        progress=False,
    )
    return task, result


async def test_same_seed_same_history() -> None:
    _, first = await run_for(40)
    _, second = await run_for(40)
    assert first.history == second.history
    assert len(first.history) > 3


async def test_a_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    _, whole = await run_for(60)
    _, part = await run_for(36, tmp_path)
    assert part.calls <= 36 and 1 < len(part.history) < len(whole.history)
    assert any(e["reason"] == "beats best" for e in part.history)  # resumes a new best + front
    with pytest.raises(Exception, match="resume=True"):
        await run_for(60, tmp_path)
    task, resumed = await run_for(60, tmp_path, resume=True)
    assert resumed.history[: len(part.history)] == part.history
    assert resumed.history == whole.history
    assert resumed.best_score == whole.best_score
    assert task.instr.prompt.value == whole.best_values["instr.prompt"] == PARTIAL


def test_the_teacher_answer_is_the_fenced_block_or_the_whole_reply() -> None:
    assert extract_value(fence("a {x}\nb")) == "a {x}\nb"
    assert extract_value("  just this  ") == "just this"
    assert extract_value("````\nhas ``` inside\n````") == "has ``` inside"


def test_template_break_names_what_changed() -> None:
    assert template_break("a {x} {y}", "b {y} {x}") is None
    assert template_break("a {x}", "b") == "template variables changed: drops {x}"
    assert "malformed" in (template_break("a {x}", "b {x") or "")
    assert template_break("not {a template", "anything") is None


async def test_a_hand_written_loop_with_propose_apply_revert() -> None:
    from promptimus.evals import evaluate

    task = Task(make_student())
    teacher = ScriptedLLM([fence(GOOD), fence(SILENT)])
    opt = Reflective(teacher=teacher).attach(task)
    assert list(opt.parameters()) == ["instr.prompt"]
    train = dataset()[:6]

    report = await evaluate(task, train, metric, progress=False)
    candidate = await opt.propose(report.rows)
    assert (candidate.path, candidate.previous, candidate.rejected) == (
        "instr.prompt",
        BASELINE,
        None,
    )
    opt.apply(candidate)
    better = await evaluate(task, train, metric, progress=False)
    assert better.score > report.score
    # the teacher saw only the failing rows, worst first
    asked = teacher.requests[0][0][0].content
    assert "'CAT'" not in asked and "'apple'" in asked

    worse = await opt.propose(better.rows)  # nothing failed: it sees every row
    opt.apply(worse)
    assert (await evaluate(task, train, metric, progress=False)).score < better.score
    opt.revert(worse)
    assert task.instr.prompt.value == GOOD


async def test_resume_refuses_a_folder_of_another_run(tmp_path: Path) -> None:
    await run_for(20, tmp_path)
    other = Task(make_student())
    del other.instr  # the same tree with its prompt under another name
    other.renamed = Prompt("Other: {text}")
    with pytest.raises(OptimizationError, match="does not belong"):
        await fit(
            other,
            dataset(),
            metric,
            optimizer=Reflective(propose=proposer(GOOD)[0]),
            budget=40,
            checkpoint_dir=tmp_path,
            resume=True,
            progress=False,
        )
    (tmp_path / "history.jsonl").write_text('{"step": 0\n')
    with pytest.raises(OptimizationError, match="line 1 is not JSON"):
        await run_for(40, tmp_path, resume=True)


async def test_fit_shows_progress_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    propose, _ = proposer(*[GOOD] * 5)
    result = await fit(
        Task(make_student()), dataset(), metric, optimizer=Reflective(propose=propose), budget=40
    )
    assert result.best_score == 1.0
    assert "fit (module calls)" in capsys.readouterr().err
