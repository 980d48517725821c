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
