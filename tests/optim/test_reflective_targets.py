"""A step proposes for the module whose calls went wrong in the failing examples' traces (the
one that raised, else the one whose output became the wrong answer), for every trainable
parameter that module owns, and the proposer's request holds those examples' calls of it."""

from __future__ import annotations

from typing import Any

from optim_task import BASELINE, GOOD, dataset, fence, make_student, metric, student_reply

from promptimus import Module, Parameter
from promptimus.dto import Message, MessageRole
from promptimus.evals import evaluate
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules.prompt import Prompt
from promptimus.optim import ProposalRequest, Reflective, fit

CLEAN = "Clean up the word: {text}"


def student(history: list[Message], kwargs: dict[str, Any]) -> str:
    system = history[0].content
    if system.startswith("Clean"):
        return system.rsplit(":", 1)[-1].strip()  # cleaning keeps the word: never the culprit
    return student_reply(history, kwargs)


class TwoStages(Module):
    """`clean` (trained, harmless) runs first, then `instr` (trained) gives the answer."""

    def __init__(self) -> None:
        super().__init__()
        self.clean = Prompt(CLEAN)
        self.instr = Prompt(BASELINE)
        self.with_llm(ScriptedLLM(student, model_name="student"))

    async def forward(self, text: str) -> Message:
        cleaned = await self.clean(text=text)
        return await self.instr(text=cleaned.content)  # type: ignore[no-any-return]


class Gate(Module):
    """Passes a word through, or raises when its rule refuses long words."""

    def __init__(self) -> None:
        super().__init__()
        self.rule = Parameter("Refuse words longer than three letters.")

    async def forward(self, text: str) -> str:
        if "Refuse" in self.rule.value and len(text) > 3:
            raise ValueError(f"{text!r} is too long for the rule {self.rule.value!r}")
        return text


class Guarded(Module):
    """`instr` answers (trained, and right once fixed), then `gate` checks the answer."""

    def __init__(self) -> None:
        super().__init__()
        self.instr = Prompt(GOOD)
        self.gate = Gate()
        self.with_llm(make_student())

    async def forward(self, text: str) -> Message:
        answer = await self.instr(text=text)
        await self.gate(text=answer.content)
        return answer  # type: ignore[no-any-return]


def recorder(answers: dict[str, str]) -> tuple[Any, list[ProposalRequest]]:
    seen: list[ProposalRequest] = []

    def propose(request: ProposalRequest) -> str:
        seen.append(request)
        return answers[request.path]

    return propose, seen


async def test_the_step_proposes_for_the_module_whose_output_was_the_wrong_answer() -> None:
    program = TwoStages()
    propose, seen = recorder({"instr.prompt": GOOD, "clean.prompt": "Clean: {text}"})
    data = dataset()[:4]
    result = await fit(
        program,
        data,
        metric,
        optimizer=Reflective(propose=propose, minibatch_size=4),
        budget=4 + 2 * 4 + 4,
        progress=False,
    )
    # in turn, `clean.prompt` came first; the traces show `instr` gave the wrong answers
    assert [request.path for request in seen] == ["instr.prompt"]
    (request,) = seen
    failing = [row.inputs["text"] for row in request.rows]
    assert sorted(failing) == ["Bird", "apple", "dog"]  # CAT was right already
    for word, trace in zip(failing, request.traces, strict=True):
        assert f"root.instr (Prompt)(text='{word}') -> '{word}'" in trace
        assert "root.clean" not in trace
    assert result.best_score == 1.0 and program.instr.prompt.value == GOOD
    assert program.clean.prompt.value == CLEAN


async def test_the_step_proposes_for_the_module_that_raised() -> None:
    program = Guarded()
    propose, seen = recorder({"gate.rule": "Let every word through.", "instr.prompt": BASELINE})
    result = await fit(
        program,
        dataset()[:4],
        metric,
        optimizer=Reflective(propose=propose, minibatch_size=4),
        budget=4 + 2 * 4 + 4,
        progress=False,
    )
    assert [request.path for request in seen] == ["gate.rule"]
    traces = "\n".join(seen[0].traces)
    assert "root.gate (Gate)(text='APPLE') raised ValueError: 'APPLE' is too long" in traces
    assert result.best_score == 1.0 and program.gate.rule.value == "Let every word through."


class Styled(Module):
    """One module owning two trained texts: an opening and a style, both in its system prompt."""

    def __init__(self) -> None:
        super().__init__()
        self.opening = Parameter("Repeat the word.")
        self.style = Parameter("Write it as given.")

    async def forward(self, text: str) -> Message:
        system = f"{self.opening.value} {self.style.value}: {text}"
        messages = [Message(role=MessageRole.SYSTEM, content=system)]
        return await self.llm.achat(messages)


class Answering(Module):
    def __init__(self) -> None:
        super().__init__()
        self.styled = Styled()
        self.with_llm(make_student())

    async def forward(self, text: str) -> Message:
        return await self.styled(text=text)  # type: ignore[no-any-return]


async def test_a_step_changes_every_parameter_of_the_module_together() -> None:
    program = Answering()
    answers = {"styled.opening": "Repeat the word,", "styled.style": "in uppercase"}
    propose, seen = recorder(answers)
    result = await fit(
        program,
        dataset()[:4],
        metric,
        optimizer=Reflective(propose=propose, minibatch_size=4),
        budget=4 + 2 * 4 + 4,
        progress=False,
    )
    assert sorted(request.path for request in seen) == ["styled.opening", "styled.style"]
    for request in seen:
        assert any("root.styled (Styled)(text='apple')" in trace for trace in request.traces)
    (step,) = result.history[1:]
    assert step["changes"] == answers and step["accepted"] and step["path"] is None
    assert result.best_score == 1.0
    assert (program.styled.opening.value, program.styled.style.value) == (
        "Repeat the word,",
        "in uppercase",
    )
    assert result.best_values == {
        "styled.opening": "Repeat the word,",
        "styled.style": "in uppercase",
    }


async def test_the_teachers_request_holds_the_failing_runs_calls_of_the_changed_module() -> None:
    program = TwoStages()
    teacher = ScriptedLLM([fence(GOOD)], model_name="teacher")
    await fit(
        program,
        dataset()[:4],
        metric,
        optimizer=Reflective(teacher=teacher, minibatch_size=4),
        budget=4 + 2 * 4 + 4,
        progress=False,
    )
    ((messages, _),) = teacher.requests
    asked = messages[0].content
    assert "The instruction is the parameter `instr.prompt`" in asked
    for word in ("apple", "Bird", "dog"):
        assert f"root.instr (Prompt)(text='{word}') -> '{word}'" in asked
    assert "root.instr (Prompt)(text='CAT')" not in asked  # CAT was answered right
    assert "root.clean" not in asked


class Repeater(Module):
    def __init__(self) -> None:
        super().__init__()
        self.instr = Prompt(BASELINE)
        self.with_llm(make_student())

    async def forward(self, text: str) -> Message:
        return await self.instr(text=text)  # type: ignore[no-any-return]


async def test_a_prompts_role_made_trainable_beside_its_text_is_left_alone() -> None:
    program = Repeater()
    program.requires_grad_(True)  # the role too, which a rewrite of the text cannot be
    assert set(dict(program.named_parameters())) >= {"instr.prompt", "instr.role"}
    propose, seen = recorder({"instr.prompt": GOOD, "instr.role": GOOD})
    result = await fit(
        program,
        dataset()[:4],
        metric,
        optimizer=Reflective(propose=propose, minibatch_size=4),
        budget=4 + 2 * 4 + 4,
        progress=False,
    )
    assert [request.path for request in seen] == ["instr.prompt"]
    assert result.best_score == 1.0 and program.instr.prompt.value == GOOD
    assert program.instr.role.value == "system"


async def test_a_proposal_for_a_role_that_is_not_one_is_rejected() -> None:
    program = Repeater()
    program.requires_grad_(True)
    optimizer = Reflective(propose=lambda request: "Be terse.")
    optimizer.attach(program)
    rows = (await evaluate(program, dataset()[:2], metric, progress=False)).rows
    candidate = await optimizer.propose(list(rows), path="instr.role")
    assert candidate.rejected is not None and "message role" in candidate.rejected
