"""The built-in metrics and LLMJudge (through ScriptedLLM)."""

from __future__ import annotations

import functools
import json

import pytest
from pydantic import BaseModel

from promptimus.dto import Message, MessageRole
from promptimus.errors import InvalidArgument, MetricResultError
from promptimus.evals import (
    Example,
    LLMJudge,
    Score,
    as_score,
    contains,
    exact_match,
    f1,
    json_match,
)
from promptimus.llms.scripted import ScriptedLLM


def reply(text: str) -> Message:
    return Message(role=MessageRole.ASSISTANT, content=text)


class Person(BaseModel):
    name: str
    age: int
    city: str = ""


def test_exact_match_compares_text_of_messages_and_strings() -> None:
    example = Example({"q": "capital of France?"}, "Paris")
    assert exact_match(example, reply("  Paris\n")) == Score(1.0)
    assert exact_match(example, "Paris") == Score(1.0)
    miss = exact_match(example, reply("paris"))
    assert miss.value == 0.0 and "expected 'Paris', got 'paris'" in miss.feedback
    assert functools.partial(exact_match, ignore_case=True)(example, "PARIS").value == 1.0
    either = Example({"q": "?"}, ["Paris", "Paris, France"])
    assert exact_match(either, "Paris, France").value == 1.0


def test_exact_match_compares_structured_outputs_as_data() -> None:
    example = Example({"text": "Ann, 31"}, {"name": "Ann", "age": 31, "city": ""})
    assert exact_match(example, Person(name="Ann", age=31)).value == 1.0
    assert exact_match(example, reply('{"age": 31, "name": "Ann", "city": ""}')).value == 1.0
    assert exact_match(example, Person(name="Ann", age=32)).value == 0.0


def test_contains_scores_the_share_found() -> None:
    assert contains(Example({}, "Oslo"), reply("It is Oslo, Norway.")).value == 1.0
    partial = contains(Example({}, ["Oslo", "Norway", "1814"]), "Oslo, Norway")
    assert partial.value == pytest.approx(2 / 3)
    assert "'1814'" in partial.feedback
    assert contains(Example({}, "oslo"), "OSLO").value == 0.0
    assert functools.partial(contains, ignore_case=True)(Example({}, "oslo"), "OSLO").value == 1


def test_f1_is_token_overlap() -> None:
    example = Example({}, "the cat sat on the mat")
    assert f1(example, reply("The cat sat on the mat.")).value == 1.0
    half = f1(example, "the cat")  # precision 1, recall 2/6
    assert half.value == pytest.approx(2 * 1 * (2 / 6) / (1 + 2 / 6))
    assert "missing words: mat, on, sat, the" in half.feedback
    assert f1(example, "dog").value == 0.0
    assert f1(Example({}, ["dog", "the cat sat"]), "the cat sat").value == 1.0


def test_json_match_field_by_field_on_a_pydantic_output() -> None:
    example = Example({"text": "..."}, {"name": "Ann", "age": 31, "city": "Oslo"})
    assert json_match(example, Person(name="Ann", age=31, city="Oslo")) == Score(1.0)
    score = json_match(example, Person(name="Ann", age=30, city="Oslo"))
    assert score.value == pytest.approx(2 / 3)
    assert score.feedback == "age: expected 31, got 30"
    assert json_match(Example({}, Person(name="Ann", age=31)), {"name": "Ann", "age": 31}).value


def test_json_match_reads_json_text_and_follows_nested_fields() -> None:
    example = Example({}, {"user": {"name": "Ann", "city": "Oslo"}, "ok": True})
    text = 'Here you go:\n```json\n{"user": {"name": "Ann", "city": "Bergen"}, "ok": true}\n```'
    score = json_match(example, reply(text))
    assert score.value == pytest.approx(2 / 3)
    assert "user.city: expected 'Oslo', got 'Bergen'" in score.feedback
    missing = json_match(example, json.dumps({"ok": True}))
    assert "user.name: missing" in missing.feedback
    not_json = json_match(example, reply("I don't know"))
    assert not_json.value == 0.0 and "not JSON" in not_json.feedback


def test_metrics_need_an_expected_value() -> None:
    with pytest.raises(InvalidArgument, match="expected"):
        exact_match(Example({"q": "?"}), "x")


@pytest.mark.parametrize("bad", ["0.5", None, [1.0], float("nan"), float("inf")])
def test_as_score_refuses_what_is_not_a_finite_number(bad: object) -> None:
    with pytest.raises(MetricResultError, match="my_metric"):

        def my_metric() -> None: ...

        as_score(bad, my_metric)


@pytest.mark.parametrize("bad", [5.0, -3, 1.0000001, Score(2.0, "twice as good")], ids=repr)
def test_as_score_refuses_a_score_outside_zero_to_one(bad: object) -> None:
    def my_metric() -> None: ...

    with pytest.raises(MetricResultError, match=r"my_metric .*between 0 and 1"):
        as_score(bad, my_metric)


def test_as_score_accepts_numbers_and_scores() -> None:
    assert as_score(1, None) == Score(1.0)
    assert as_score(True, None) == Score(1.0)
    assert as_score(Score(0.25, "meh"), None) == Score(0.25, "meh")
    with pytest.raises(MetricResultError):
        Score("high")  # type: ignore[arg-type]


async def test_llm_judge_scores_with_feedback_and_its_rubric_is_a_parameter() -> None:
    def grade(history: list[Message], kwargs: dict[str, object]) -> str:
        system, user = history[0].content, history[-1].content
        assert "Only exact city names count." in system  # the rubric reached the prompt
        good = "## Output\nOslo" in user and "## Expected\nOslo" in user
        return json.dumps({"score": 1.0 if good else 0.2, "feedback": "names the wrong city"})

    llm = ScriptedLLM(grade)
    judge = LLMJudge("Only exact city names count.").with_llm(llm)
    assert dict(judge.named_parameters())["rubric"].value == "Only exact city names count."
    example = Example({"question": "Capital of Norway?"}, "Oslo")
    assert await judge(example, reply("Oslo")) == Score(1.0, "names the wrong city")
    low = await judge(example, "Bergen")
    assert low.value == pytest.approx(0.2) and low.feedback == "names the wrong city"
    assert "## Inputs\nquestion: Capital of Norway?" in llm.requests[0][0][-1].content


async def test_llm_judge_sends_an_out_of_range_score_back_once() -> None:
    llm = ScriptedLLM(['{"score": 7, "feedback": "great"}', '{"score": 0.7, "feedback": "ok"}'])
    judge = LLMJudge().with_llm(llm)
    assert await judge(Example({"q": "?"}), "answer") == Score(0.7, "ok")
    assert "less than or equal to 1" in llm.requests[1][0][-1].content
