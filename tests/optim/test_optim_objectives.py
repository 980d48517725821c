"""Several objectives: `fit(objectives=...)` measures score, cost, tokens and latency for every
validated candidate, keeps the non-dominated ones as `TrainResult.frontier`, and a rule the user
states (`Weighted`, `BestUnder`) picks among them, during the run (`select=`) or after
(`TrainResult.pick`)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from optim_task import GOOD, Task, metric, student_reply

from promptimus.dto import Message
from promptimus.errors import (
    InvalidArgument,
    InvalidObjective,
    NoCandidateFits,
    OptimizationError,
    UnknownObjective,
    UnpricedModel,
)
from promptimus.evals import EvalJob, EvalReport, Example, InProcessRunner
from promptimus.llms.scripted import ScriptedLLM
from promptimus.optim import (
    BestUnder,
    Cost,
    FewShot,
    Latency,
    Objective,
    ProposalRequest,
    Reflective,
    Weighted,
    fit,
)

CHEAP = "In capitals: {text}"  # cheaper than the baseline and right on short words
WORDS = ["apple", "Bird", "CAT", "dog"]
PRICES = {"student": (1000.0, 1000.0)}  # a thousandth per token, prompt or completion


def examples(words: list[str] = WORDS) -> list[Example]:
    return [Example({"text": w}, expected=w.upper()) for w in words]


def scripted(*values: str) -> Any:
    queue = list(values)

    async def propose(request: ProposalRequest) -> str:
        return queue.pop(0) if queue else GOOD

    return propose


async def two_objective_fit(**options: Any) -> tuple[Any, Task, ScriptedLLM]:
    student = ScriptedLLM(student_reply, model_name="student")
    task = Task(student)
    result = await fit(
        task,
        examples(),
        objectives={"score": metric, "cost": Cost(PRICES)},
        optimizer=Reflective(propose=scripted(CHEAP, GOOD), minibatch_size=4),
        progress=False,
        **{"budget": 28, **options},
    )
    return result, task, student


async def test_a_two_objective_fit_returns_the_frontier_of_score_against_cost() -> None:
    result, task, student = await two_objective_fit()

    # a token is a word: baseline 1 of 4 right at 4 + 1 tokens an example; CHEAP 2 of 4 at
    # 3 + 1 (it dominates the baseline); GOOD 4 of 4 at 6 + 1
    assert [p.candidate for p in result.frontier] == [1, 2]
    cheap, good = result.frontier
    assert cheap.objectives == {"score": 0.5, "cost": pytest.approx(0.004)}
    assert good.objectives == {"score": 1.0, "cost": pytest.approx(0.007)}
    assert cheap.values == {"instr.prompt": CHEAP} and good.values == {"instr.prompt": GOOD}
    assert result.objectives == {"score": "higher", "cost": "lower"}
    # without select=, the best score is kept, as in a single-metric fit
    assert good.chosen and not cheap.chosen
    assert task.instr.prompt.value == GOOD and result.best_score == 1.0
    assert len(student.requests) == result.calls == 28
    baseline = result.history[0]
    assert baseline["objectives"] == {"score": 0.25, "cost": pytest.approx(0.005)}
    assert str(result).splitlines()[-3:] == [
        "  frontier (2 candidates):",
        "    #1: score 0.5, cost 0.004",
        "    #2: score 1, cost 0.007 (kept)",
    ]
    assert "#2: score 1, cost 0.007 (kept)" in result._repr_html_()


async def test_pick_chooses_by_the_rule_the_user_states() -> None:
    result, _, _ = await two_objective_fit()

    assert result.pick(BestUnder("score", cost=0.006)).values == {"instr.prompt": CHEAP}
    assert result.pick(BestUnder("score", cost=0.01)).values == {"instr.prompt": GOOD}
    # a weight is what one unit is worth; lower-better objectives count against
    assert result.pick(Weighted({"score": 1, "cost": 1})).candidate == 2
    assert result.pick(Weighted({"score": 1, "cost": 300})).candidate == 1
    # a bound on a higher-better objective is a floor: the cheapest with score >= 0.75
    assert result.pick(BestUnder("cost", score=0.75)).candidate == 2
    with pytest.raises(NoCandidateFits, match=r"cost <= 0\.001"):
        result.pick(BestUnder("score", cost=0.001))
    with pytest.raises(UnknownObjective, match="latency"):
        result.pick(BestUnder("score", latency=2.0))
    with pytest.raises(InvalidArgument, match="Weighted"):
        result.pick({"score": 1.0})  # type: ignore[arg-type]


async def test_select_makes_the_rule_decide_what_training_keeps(tmp_path: Path) -> None:
    result, task, student = await two_objective_fit(
        select=BestUnder("score", cost=0.006), checkpoint_dir=tmp_path, budget=40
    )

    # GOOD scored higher but costs more than the cap: validated, on the frontier, not kept
    assert task.instr.prompt.value == CHEAP
    assert [(p.candidate, p.chosen) for p in result.frontier] == [(1, True), (2, False)]
    assert result.best_score == 0.5
    good = next(e for e in result.history if e.get("value") == GOOD and "val_score" in e)
    assert not good["accepted"] and "cost" in good["reason"]
    assert Task(student).load(tmp_path / "best.toml").instr.prompt.value == CHEAP
    assert len(student.requests) <= 40


async def test_tokens_and_latency_are_measured_with_an_injected_clock() -> None:
    clock = Clock()

    async def slow_student(history: list[Message], kwargs: dict[str, Any]) -> str:
        clock.now += 0.5 * len(history[0].content.split())  # half a second a prompt word
        return student_reply(history, kwargs)

    task = Task(ScriptedLLM(slow_student, model_name="student"))
    result = await fit(
        task,
        examples(),
        objectives={"score": metric, "tokens": "tokens", "latency": Latency(clock=clock)},
        optimizer=Reflective(propose=scripted(CHEAP, GOOD), minibatch_size=4),
        budget=28,
        concurrency=1,
        progress=False,
    )

    assert [p.objectives for p in result.frontier] == [
        {"score": 0.5, "tokens": 4.0, "latency": 1.5},
        {"score": 1.0, "tokens": 7.0, "latency": 3.0},
    ]
    assert clock.reads == 2 * 28  # twice per example run, minibatches included


async def test_fewshot_keeps_a_frontier_of_score_against_tokens() -> None:
    def demo_student(history: list[Message], kwargs: dict[str, Any]) -> str:
        word = history[0].content.rsplit(":", 1)[-1].strip()
        return word.upper() if len(history) > 1 else word  # any demo teaches it

    task = Task(ScriptedLLM(demo_student, model_name="student"))
    result = await fit(
        task,
        examples(),
        objectives={"score": metric, "tokens": Objective(tokens_of, better="lower")},
        optimizer=FewShot(k=1, candidates=1, min_score=0.0),
        budget=4 + 4 + 4,
        progress=False,
    )

    baseline, demos = result.frontier
    assert baseline.candidate == 0 and baseline.objectives["score"] == 0.25
    assert demos.objectives["score"] == 1.0
    assert demos.objectives["tokens"] > baseline.objectives["tokens"]
    assert demos.chosen and task.instr.demos.value == demos.values["instr.demos"]


def tokens_of(example: Example, output: Message) -> float:
    return float(output.usage.total_tokens) if output.usage else 0.0


async def test_a_resumed_fit_keeps_the_objectives_and_the_frontier(tmp_path: Path) -> None:
    whole, _, _ = await two_objective_fit()
    first, _, _ = await two_objective_fit(checkpoint_dir=tmp_path, budget=16)
    assert [p.candidate for p in first.frontier] == [1]

    task = Task(ScriptedLLM(student_reply, model_name="student"))
    resumed = await fit(
        task,
        examples(),
        objectives={"score": metric, "cost": Cost(PRICES)},
        optimizer=Reflective(propose=scripted(GOOD), minibatch_size=4),
        budget=28,
        checkpoint_dir=tmp_path,
        resume=True,
        progress=False,
    )
    assert resumed.frontier == whole.frontier
    assert resumed.history == whole.history

    with pytest.raises(OptimizationError, match="cost"):
        await fit(
            Task(ScriptedLLM(student_reply, model_name="student")),
            examples(),
            objectives={"score": metric, "tokens": "tokens"},
            optimizer=Reflective(propose=scripted(), minibatch_size=4),
            budget=40,
            checkpoint_dir=tmp_path,
            resume=True,
            progress=False,
        )


async def test_a_model_without_a_price_is_named_not_counted_as_free() -> None:
    task = Task(ScriptedLLM(student_reply, model_name="other"))
    with pytest.raises(UnpricedModel, match="'other'"):
        await fit(
            task,
            examples(),
            objectives={"score": metric, "cost": Cost(PRICES)},
            optimizer=Reflective(propose=scripted(), minibatch_size=4),
            budget=28,
            progress=False,
        )


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"objectives": {"cost": Cost(PRICES)}}, InvalidObjective, "metric"),
        ({"objectives": {"score": metric}, "metric": metric}, InvalidArgument, "either"),
        ({"objectives": {"score": metric, "cost": "cost"}}, InvalidObjective, r"Cost\("),
        ({"objectives": {"score": metric, "speed": "fast"}}, InvalidObjective, "'speed'"),
        ({"objectives": {"score": 0.5}}, InvalidObjective, "'score'"),
        ({"objectives": {"score": Objective(metric, better="lower")}}, InvalidObjective, "higher"),
        ({"objectives": {}}, InvalidObjective, "metric"),
        ({"objectives": [metric]}, InvalidObjective, "dict"),
        (
            {"objectives": {"score": metric}, "select": BestUnder("score", cost=0.01)},
            UnknownObjective,
            "cost",
        ),
        ({"objectives": {"score": metric}, "select": "best"}, InvalidArgument, "BestUnder"),
        ({"metric": metric, "concurrency": 0}, InvalidArgument, "concurrency"),
        ({"metric": metric, "concurrency": True}, InvalidArgument, "concurrency"),
        ({"metric": metric, "concurrency": "4"}, InvalidArgument, "concurrency"),
    ],
)
async def test_bad_objectives_are_named_before_any_call(
    options: dict[str, Any], error: type[Exception], match: str
) -> None:
    student = ScriptedLLM(student_reply, model_name="student")
    metric_arg = options.pop("metric", None)
    with pytest.raises(error, match=match):
        await fit(
            Task(student),
            examples(),
            metric_arg,
            optimizer=Reflective(propose=scripted(), minibatch_size=4),
            budget=28,
            progress=False,
            **options,
        )
    assert student.requests == []


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0, "1", True, None])
def test_rules_refuse_bad_numbers_where_given(bad: Any) -> None:
    with pytest.raises(InvalidObjective, match="cost"):
        Weighted({"score": 1.0, "cost": bad})
    with pytest.raises(InvalidObjective, match="cost"):
        BestUnder("score", cost=bad)


def test_objectives_refuse_bad_construction() -> None:
    with pytest.raises(InvalidObjective, match="higher"):
        Objective(metric, better="best")  # type: ignore[arg-type]
    with pytest.raises(InvalidObjective, match="callable"):
        Objective("score")  # type: ignore[arg-type]
    with pytest.raises(InvalidObjective, match="clock"):
        Latency(clock=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="pricing"):
        Cost({"student": (math.nan, 1.0)})
    with pytest.raises(InvalidObjective, match="price table"):
        Cost(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidObjective, match="weight"):
        Weighted({})
    with pytest.raises(InvalidObjective, match="weight"):
        Weighted({"score": 0.0})
    with pytest.raises(InvalidObjective, match="bound"):
        BestUnder("score")


async def test_cost_needs_the_in_process_runner() -> None:
    class Elsewhere:
        """A runner that is not the in-process one (as Ray's is not)."""

        async def prepare(self, job: EvalJob) -> None:
            return None

        async def run(self, job: EvalJob, on_row: Any) -> EvalReport:
            return await InProcessRunner().run(job, on_row)

    student = ScriptedLLM(student_reply, model_name="student")
    with pytest.raises(InvalidObjective, match="runner"):
        await fit(
            Task(student),
            examples(),
            objectives={"score": metric, "cost": Cost(PRICES)},
            optimizer=Reflective(propose=scripted(), minibatch_size=4),
            budget=28,
            runner=Elsewhere(),
            progress=False,
        )
    assert student.requests == []


class Clock:
    """A clock the student advances: latency counted, never timed."""

    def __init__(self) -> None:
        self.now = 100.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


async def test_a_clock_that_does_not_give_seconds_is_named_not_an_example_error() -> None:
    task = Task(ScriptedLLM(student_reply, model_name="student"))
    with pytest.raises(InvalidObjective, match="clock returned 'now'"):
        await fit(
            task,
            examples(),
            objectives={"score": metric, "latency": Latency(clock=lambda: "now")},  # type: ignore[arg-type,return-value]
            optimizer=Reflective(propose=scripted(), minibatch_size=4),
            budget=28,
            progress=False,
        )
