"""Reflection on whole runs: each evaluated example keeps the module calls of its run, and the
teacher is shown, for the parameter it changes, the calls of the module that owns it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from optim_task import BASELINE, GOOD, dataset, fence, metric

from promptimus import Module
from promptimus.dto import Message
from promptimus.evals import evaluate
from promptimus.llms.openai import OpenAILike
from promptimus.modules.prompt import Prompt
from promptimus.optim import Reflective
from promptimus.testing import FakeOpenAIServer


@pytest.fixture
def srv() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


class Pipeline(Module):
    """Two stages: `clean` trims the word (frozen), `instr` repeats it (trained)."""

    def __init__(self, llm: Any) -> None:
        super().__init__()
        self.clean = Prompt("Clean up the word: {text}")
        self.clean.prompt.frozen = True
        self.instr = Prompt(BASELINE)
        self.with_llm(llm)

    async def forward(self, text: str) -> Message:
        cleaned = await self.clean(text=text)
        return await self.instr(text=cleaned.content)  # type: ignore[no-any-return]


def answer(body: dict[str, Any]) -> str:
    text = body["messages"][0]["content"]
    if body["model"] == "teacher":
        return fence(GOOD)
    word = text.rsplit(":", 1)[-1].strip()
    if text.startswith("Clean"):
        return f"{word}-cleaned"
    return word.upper() if "uppercase" in text else word


def llm_at(srv: FakeOpenAIServer, model: str) -> OpenAILike:
    return OpenAILike(model, api_key=srv.api_key, base_url=srv.base_url, timeout=30.0)


async def test_each_row_keeps_the_module_calls_of_its_run(srv: FakeOpenAIServer) -> None:
    srv.chat.respond_with(answer)
    report = await evaluate(Pipeline(llm_at(srv, "student")), dataset()[:2], metric, progress=False)
    trace = report.rows[0].trace
    assert trace is not None
    assert [c.path for c in trace.calls] == ["root.clean", "root.instr", "root"]
    clean, instr, root = trace.calls
    assert "text='apple'" in clean.inputs and clean.output == "'apple-cleaned'"
    assert "text='apple-cleaned'" in instr.inputs and instr.output == "'apple-cleaned'"
    assert root.inputs == "text='apple'"
    assert [c.path for c in trace.calls_under("root.instr")] == ["root.instr"]
    assert report.rows[1].trace is not None and "Bird" in report.rows[1].trace.calls[0].inputs


async def test_the_teacher_sees_the_failing_runs_calls_of_the_module_it_changes(
    srv: FakeOpenAIServer,
) -> None:
    srv.chat.respond_with(answer)
    program = Pipeline(llm_at(srv, "student"))
    report = await evaluate(program, dataset()[:3], metric, progress=False)
    opt = Reflective(teacher=llm_at(srv, "teacher")).attach(program)
    candidate = await opt.propose(report.rows)
    assert candidate.path == "instr.prompt" and candidate.value == GOOD

    (teacher,) = [r for r in srv.chat.requests if r["model"] == "teacher"]
    text = teacher["messages"][0]["content"]
    # the calls of `instr` within each failing example's run, with what it got and gave
    for word in ("apple", "Bird"):
        assert f"root.instr (Prompt)(text='{word}-cleaned') -> '{word}-cleaned'" in text
    # the other stage's calls are not the changed module's, so they are left out
    assert "root.clean" not in text


async def test_a_long_trace_is_cut_to_the_token_budget(srv: FakeOpenAIServer) -> None:
    srv.chat.respond_with(answer)
    program = Pipeline(llm_at(srv, "student"))
    long_word = [dataset(["x" * 3000])[0]]
    report = await evaluate(program, long_word, metric, progress=False)
    seen: list[Any] = []

    def propose(request: Any) -> str:
        seen.append(request)
        return GOOD

    opt = Reflective(propose=propose, trace_tokens=50).attach(program)
    await opt.propose(report.rows)
    (trace,) = seen[0].traces
    assert len(trace) <= 50 * 4 + 60
    assert "root.instr" in trace and "cut at about 50 tokens" in trace
