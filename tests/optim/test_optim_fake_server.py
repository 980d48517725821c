"""fit end to end over HTTP: the real openai SDK talks to the fake server, whose student answers
correctly only when its system prompt asks for uppercase, and whose teacher proposes that."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from optim_task import GOOD, Task, dataset, fence, metric

from promptimus.evals import evaluate
from promptimus.llms.openai import OpenAILike
from promptimus.optim import Reflective, fit
from promptimus.testing import FakeOpenAIServer


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


def answer(body: dict[str, Any]) -> str:
    text = body["messages"][0]["content"]
    if body["model"] == "teacher":
        return fence(GOOD) if "answers must be uppercase" in text else "no idea"
    word = text.rsplit(":", 1)[-1].strip()
    return word.upper() if "uppercase" in text else word


async def test_fit_raises_the_held_out_score_over_http(srv: FakeOpenAIServer) -> None:
    srv.chat.respond_with(answer)

    def llm(model: str) -> OpenAILike:
        return OpenAILike(model, api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)

    task = Task(llm("student"))
    data = dataset()
    train, val, test = data[:4], data[4:8], data[8:]
    before = await evaluate(task, test, metric, progress=False)
    result = await fit(
        task,
        train,
        metric,
        optimizer=Reflective(teacher=llm("teacher"), minibatch_size=4),
        valset=val,
        budget=4 + 4 + 4 + 4,
        progress=False,
    )
    after = await evaluate(task, test, metric, progress=False)

    assert before.score == 0.25 and after.score == 1.0
    assert result.best_score == 1.0 and task.instr.prompt.value == GOOD
    student_calls = [r for r in srv.chat.requests if r["model"] == "student"]
    assert len(student_calls) == result.calls + 2 * len(test) <= 16 + 8
    assert result.usage.total_tokens > 0


# --- training that starts from zero: a student that only copies the demos it is shown ---------


def copier(body: dict[str, Any]) -> str:
    """A weak student: it gets nothing right alone, and answers as a demo of a word of the
    same length did (uppercase when that demo's answer was)."""
    messages = body["messages"]
    word = messages[0]["content"].rsplit(":", 1)[-1].strip()
    shown = [m["content"] for m in messages[1:]]  # the demos: user / assistant turns
    for asked, answered in zip(shown[::2], shown[1::2], strict=False):
        if len(asked) == len(word) and answered.isupper():
            return word.upper()
    return f"{word}?"


async def test_fewshot_falls_back_to_labelled_demos_when_nothing_succeeds(
    srv: FakeOpenAIServer,
) -> None:
    from promptimus.evals import Example
    from promptimus.optim import FewShot

    srv.chat.respond_with(copier)
    task = Task(OpenAILike("student", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0))
    words = ["ant", "bee", "cow", "deer", "duck", "frog", "goose", "horse", "llama", "mouse"]
    train = [Example({"text": w}, expected=w.upper()) for w in words]
    val = dataset(["fig", "goat", "apple", "ink"])
    result = await fit(
        task,
        train,
        metric,
        optimizer=FewShot(k=3, candidates=4, seed=1),
        valset=val,
        budget=len(val) + len(train) + 4 * len(val),
        progress=False,
    )

    boot = result.history[1]
    assert boot["reason"].startswith("bootstrapped 0 demos from 10 examples; fewer than k=3")
    assert (boot["demos_bootstrapped"], boot["demos_labelled"]) == (0, 10)
    tried = [e for e in result.history if e["candidate"] not in (None, 0)]
    assert tried and all(e["demos_labelled"] == 3 and e["demos_bootstrapped"] == 0 for e in tried)
    assert result.baseline_score == 0.0 and result.best_score > 0.0
    demos = task.instr.demos.value
    assert len(demos) == 3 and all(answer == text.upper() for text, answer in demos)


async def test_a_metric_with_nothing_to_say_may_give_no_feedback(srv: FakeOpenAIServer) -> None:
    from promptimus.evals import Score

    def exact(example: Any, output: Any) -> Score:
        if output.content == example.expected:
            return Score(1.0, None)
        return Score(0.0, f"expected {example.expected!r}")

    srv.chat.respond_with(lambda body: body["messages"][0]["content"].rsplit(":", 1)[-1].strip())
    task = Task(OpenAILike("student", api_key=srv.api_key, base_url=srv.base_url, timeout=30.0))
    report = await evaluate(task, dataset(["CAT", "dog"]), exact, progress=False)
    assert [(row.score, row.feedback) for row in report.rows] == [
        (1.0, ""),
        (0.0, "expected 'DOG'"),
    ]
    assert Score(1.0, None) == Score(1.0)


async def test_a_teacher_that_proposes_nonsense_changes_nothing_and_says_why(
    srv: FakeOpenAIServer,
) -> None:
    nonsense = iter(
        [
            "",  # empty
            "Repeat the word: {text}",  # unchanged
            "Repeat the {word}",  # drops {text}
            "I am a small model. The answer is 42: {text}",  # tried, not better
        ]
        * 10
    )

    def answer_or_babble(body: dict[str, Any]) -> str:
        if body["model"] == "teacher":
            return fence(next(nonsense))
        return body["messages"][0]["content"].rsplit(":", 1)[-1].strip()

    srv.chat.respond_with(answer_or_babble)

    def llm(model: str) -> OpenAILike:
        return OpenAILike(model, api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)

    task = Task(llm("student"))
    data = dataset()
    result = await fit(
        task,
        data[:4],
        metric,
        optimizer=Reflective(teacher=llm("teacher"), minibatch_size=4),
        valset=data[4:8],
        budget=40,
        progress=False,
    )
    assert task.instr.prompt.value == "Repeat the word: {text}"  # every proposal reverted
    assert result.best_score == result.baseline_score
    proposals = [e for e in result.history if e.get("value") is not None]
    assert len(proposals) >= 4 and not any(e["accepted"] for e in proposals)
    reasons = [e["reason"] for e in proposals[:4]]
    assert reasons[0] == "empty proposal"
    assert reasons[1] == "unchanged"
    assert reasons[2].startswith("template variables changed: drops {text}; adds {word}")
    assert reasons[3].startswith("not better on minibatch: ")
    assert result.calls <= 40
