"""Examples whose inputs do not fit the module's `forward` are refused before any call, by
`evaluate` and by `fit`, naming the inputs and the parameters (never a `TypeError` per row that
scores 0 and spends the budget)."""

from __future__ import annotations

from typing import Any

import pytest
from optim_task import GOOD, Task, dataset, fence, make_student, metric

from promptimus import Module
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.errors import DatasetError, ExampleInputsMismatch
from promptimus.evals import CallCounter, Example, evaluate, exact_match
from promptimus.llms.scripted import ScriptedLLM
from promptimus.optim import Reflective, fit


class Keywords(Module):
    async def forward(self, text: str, *, style: str = "plain", **extra: Any) -> str:
        return f"{style}: {text}"


async def test_an_agent_given_question_instead_of_request_is_refused_before_a_call() -> None:
    llm = ScriptedLLM(["4"] * 10)
    agent = OpenaiToolCallingAgent("You do sums.").with_llm(llm)
    data = [Example({"question": f"{n}+{n}?"}, str(2 * n)) for n in range(5)]
    counter = CallCounter(100)
    with pytest.raises(ExampleInputsMismatch) as raised:
        await evaluate(agent, data, exact_match, progress=False, counter=counter)
    message = str(raised.value)
    assert "5 of 5 examples of evaluate's dataset do not fit" in message
    assert "OpenaiToolCallingAgent.forward(request, deps=None, **prompt_vars)" in message
    assert "example 0 gives (question): 'request' missing" in message
    assert "(2 more)" in message
    assert isinstance(raised.value, DatasetError) and isinstance(raised.value, TypeError)
    assert llm.requests == [] and counter.calls == 0


async def test_one_misfit_among_fitting_examples_stops_the_run_naming_it() -> None:
    module = Keywords()
    data = [
        Example({"text": "a"}, "plain: a"),
        Example({"text": "b", "style": "bold", "anything": 1}, "bold: b"),  # **extra takes it
        Example({"txt": "c"}, "plain: c"),
    ]
    with pytest.raises(ExampleInputsMismatch, match=r"1 of 3 .* example 2 gives \(txt\): 'text'"):
        await evaluate(module, data, exact_match, progress=False)
    report = await evaluate(module, data[:2], exact_match, progress=False)
    assert report.score == 1.0  # the ones that fit run as before

    async def plain(text: str) -> str:  # a function is checked the same way
        return text

    with pytest.raises(ExampleInputsMismatch, match=r"'txt' not taken; 'text' missing"):
        await evaluate(plain, data[2:], exact_match, progress=False)


@pytest.mark.parametrize("where", ["trainset", "valset"])
async def test_fit_refuses_misfit_examples_before_spending_its_budget(where: str) -> None:
    student = make_student()
    teacher = ScriptedLLM([fence(GOOD)] * 5)
    good = dataset()
    bad = [Example({"word": e.inputs["text"]}, e.expected) for e in good]
    trainset, valset = (bad, good) if where == "trainset" else (good, bad)
    with pytest.raises(ExampleInputsMismatch, match=f"examples of fit's {where} do not fit"):
        await fit(
            Task(student), trainset, metric, optimizer=Reflective(teacher=teacher),
            valset=valset, budget=30, progress=False,
        )  # fmt: skip
    assert student.requests == [] and teacher.requests == []
