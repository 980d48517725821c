"""FewShot: bootstrap demos from the module's own successes and keep the set that validates best;
demos are example turns of a Prompt, present only when used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from optim_task import Task, metric

from promptimus.dto import Message, MessageRole
from promptimus.errors import CheckpointMismatch, InvalidArgument
from promptimus.evals import Example
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules.prompt import Prompt
from promptimus.optim import FewShot, fit


def demo_student(history: list[Message], kwargs: dict[str, Any]) -> str:
    """Uppercases a word when a demo shows a word of the same length (or it already is)."""
    word = history[0].content.rsplit(":", 1)[-1].strip()
    shown = {len(m.content) for m in history[1:] if m.role == MessageRole.USER}
    return word.upper() if word.isupper() or len(word) in shown else word


def examples(*words: str) -> list[Example]:
    return [Example({"text": w}, expected=w.upper()) for w in words]


TRAIN = examples("CAT", "GOAT", "APPLE", "dog", "fish", "lemon")
VAL = examples("ink", "jam", "log", "kite", "pear", "mango")


async def test_fewshot_keeps_the_demos_that_validate_best(tmp_path: Path) -> None:
    student = ScriptedLLM(demo_student)
    task = Task(student)
    assert "demos" not in dict(task.named_parameters())

    result = await fit(
        task,
        TRAIN,
        metric,
        optimizer=FewShot(k=1, candidates=6, seed=3),
        valset=VAL,
        budget=6 + 6 + 6 * 6,
        checkpoint_dir=tmp_path,
        progress=False,
    )

    boot = result.history[1]
    assert boot["reason"] == "bootstrapped 3 demos from 6 examples"  # CAT, GOAT, APPLE
    tried = [e for e in result.history if e["candidate"] not in (None, 0)]
    assert len(tried) == 6
    best = max(tried, key=lambda e: e["val_score"])
    assert task.instr.demos.value == best["value"] == [["CAT", "CAT"]]
    assert result.baseline_score == 0.0 and result.best_score == 0.5
    assert len(student.requests) == result.calls == 48

    # the demos are example turns, right after the prompt
    sent = task.instr.render(text="ink")
    assert [(m.role, m.content) for m in sent[1:]] == [
        (MessageRole.USER, "CAT"),
        (MessageRole.ASSISTANT, "CAT"),
    ]
    # best.toml holds the demos; a tree whose Prompt is built with demos=[] loads it strictly
    fresh = Task(student)
    fresh.instr = Prompt("Repeat the word: {text}", demos=[])
    fresh.load(tmp_path / "best.toml")
    assert fresh.instr.demos.value == [["CAT", "CAT"]]
    # a Prompt without demos refuses it, naming the key
    with pytest.raises(CheckpointMismatch, match="demos"):
        Task(student).load(tmp_path / "best.toml")


async def test_fewshot_stops_when_nothing_succeeds_and_nothing_is_labelled() -> None:
    student = ScriptedLLM(lambda history, kw: "no idea")
    task = Task(student)
    unlabelled = [Example(e.inputs) for e in TRAIN]
    result = await fit(
        task, unlabelled, metric, optimizer=FewShot(), valset=VAL, budget=100, progress=False
    )
    assert result.history[-1]["reason"] == "bootstrapped 0 demos from 6 examples"
    assert task.instr.demos.value == []
    assert result.calls == 12


async def test_fewshot_completes_too_few_successes_with_labelled_demos() -> None:
    student = ScriptedLLM(lambda history, kw: "no idea")
    task = Task(student)
    result = await fit(
        task,
        TRAIN,
        metric,
        optimizer=FewShot(k=2, candidates=2),
        valset=VAL,
        budget=100,
        progress=False,
    )
    boot = result.history[1]
    assert boot["reason"] == (
        "bootstrapped 0 demos from 6 examples; fewer than k=2, so each set is completed with "
        "labelled demos (inputs -> expected) from 6 examples"
    )
    tried = [e for e in result.history if e["candidate"] not in (None, 0)]
    assert len(tried) == 2
    for entry in tried:
        assert (entry["demos_bootstrapped"], entry["demos_labelled"]) == (0, 2)
        assert all(
            [text, text.upper()] in [[e.inputs["text"], e.expected] for e in TRAIN]
            for text, _ in entry["value"]
        )
    assert result.calls == 6 + 6 + 2 * 6


def test_prompt_without_demos_keeps_its_checkpoint_shape(tmp_path: Path) -> None:
    plain = Prompt("Hi {name}")
    assert "demos" not in plain.serialize()["params"]
    plain.save(tmp_path / "p.toml")
    Prompt("other {name}").load(tmp_path / "p.toml")  # strict load of the old shape
    with pytest.raises(InvalidArgument, match="pair"):
        Prompt("x", demos=[["only one"]]).render()
