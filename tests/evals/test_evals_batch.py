"""`evaluate(..., batch=True)` on the fake OpenAI and Anthropic servers, through the real SDKs:
the direct path's report at half the price, one batch per round for a module whose second call
needs its first answer, and expiry, failed batches and failed requests handled by name."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import promptimus as pm
from promptimus.dto import Message, MessageRole
from promptimus.errors import (
    BatchExpired,
    BatchFailed,
    BatchUnsupported,
    InvalidArgument,
)
from promptimus.evals import BatchOptions, EvalReport, Example, evaluate, exact_match
from promptimus.llms import Anthropic, OpenAILike
from promptimus.llms.batch_api import BatchStatus
from promptimus.llms.scripted import ScriptedLLM
from promptimus.testing import FakeAnthropicServer, FakeOpenAIServer, Fault

SECRET = "sk-batch-secret-7f3a9c"
BOUND = 60  # seconds; generous, so a regression fails instead of hanging
PRICING = {"gpt-4o-mini": (0.15, 0.60), "claude-fake": (3.0, 15.0)}


@dataclass
class Lane:
    """One provider with its fake server."""

    name: str
    server: Any
    llm: Any

    @property
    def batches(self) -> Any:
        return self.server.batches


@pytest.fixture(params=["openai", "anthropic"])
def lane(request: pytest.FixtureRequest) -> Iterator[Lane]:
    if request.param == "openai":
        with FakeOpenAIServer(api_key=SECRET, require_auth=True) as server:
            llm = OpenAILike("gpt-4o-mini", api_key=SECRET, base_url=server.base_url)
            yield Lane("openai", server, llm)
    else:
        with FakeAnthropicServer(api_key=SECRET, require_auth=True) as server:
            llm = Anthropic("claude-fake", api_key=SECRET, base_url=server.base_url)
            yield Lane("anthropic", server, llm)


class Ask(pm.Module):
    """One model call per example."""

    def __init__(self) -> None:
        super().__init__()
        self.prompt = pm.Prompt("Answer in one word.")

    async def forward(self, question: str) -> str:
        reply = await self.prompt.forward([Message(role=MessageRole.USER, content=question)])
        return reply.content


class AskTwice(pm.Module):
    """Two model calls per example; the second is sent the first one's answer."""

    def __init__(self, *, streamed: bool = False) -> None:
        super().__init__()
        self.draft = pm.Prompt("Draft an answer.")
        self.polish = pm.Prompt("Polish the draft.")
        self.streamed = streamed

    async def forward(self, question: str) -> str:
        asked = [Message(role=MessageRole.USER, content=question)]
        draft = await self.draft.forward(asked)
        again = [Message(role=MessageRole.USER, content=draft.content)]
        if self.streamed:
            pieces: list[str] = []
            polished = await self.polish.forward_streamed(
                again, lambda delta: pieces.append(delta.content or "")
            )
            assert "".join(pieces) == polished.content
        else:
            polished = await self.polish.forward(again)
        return polished.content


def dataset(size: int, echoes: int = 1) -> list[Example]:
    return [
        Example(inputs={"question": f"q{i}"}, expected="echo: " * echoes + f"q{i}")
        for i in range(size)
    ]


class Polls:
    """A sleep that only counts (nothing waits for real) and the statuses seen."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []
        self.statuses: list[BatchStatus] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)

    def options(self, **kwargs: Any) -> BatchOptions:
        return BatchOptions(
            poll_interval=7.0, sleep=self.sleep, on_status=self.statuses.append, **kwargs
        )


def rows_of(report: EvalReport) -> list[tuple[Any, float, str, str | None]]:
    return [(row.output, row.score, row.feedback, row.error) for row in report.rows]


async def test_a_batch_evaluation_gives_the_direct_report_at_half_the_price(lane: Lane) -> None:
    module = Ask().with_llm(lane.llm)
    data = dataset(5)
    direct = await evaluate(module, data, exact_match, progress=False)
    polls = Polls()
    batched = await evaluate(
        module, data, exact_match, progress=False, batch=polls.options(pricing=PRICING)
    )

    assert direct.score == 1.0
    assert rows_of(batched) == rows_of(direct)
    assert batched.usage == direct.usage  # same requests, same tokens
    assert direct.batch is None
    summary = batched.batch
    assert summary is not None
    assert (summary.rounds, summary.batches, summary.requests) == (1, 1, 5)
    direct_cost, cost = summary.direct_cost(), summary.cost()
    assert direct_cost is not None and cost is not None and direct_cost > 0
    assert math.isclose(cost, direct_cost / 2)
    assert "50% of the direct price" in batched.summary()
    # the server answered one batch of five, and no direct request
    assert len(lane.batches.batches) == 1
    assert len(lane.server.chat.requests) == 5 + 5  # the direct run's five, the batch's five
    # it waited by polling: the injected sleep, every poll interval, and a status each time
    assert polls.sleeps and set(polls.sleeps) == {7.0}
    assert polls.statuses[-1].done == polls.statuses[-1].total == 5
    assert polls.statuses[0].done == 0


async def test_a_module_whose_second_call_needs_the_first_runs_round_by_round(
    lane: Lane,
) -> None:
    module = AskTwice().with_llm(lane.llm)
    data = dataset(4, echoes=2)
    direct = await evaluate(module, data, exact_match, progress=False)
    batched = await evaluate(module, data, exact_match, progress=False, batch=Polls().options())

    assert direct.score == 1.0
    assert rows_of(batched) == rows_of(direct)
    assert batched.batch is not None
    assert (batched.batch.rounds, batched.batch.batches, batched.batch.requests) == (2, 2, 8)
    sizes = [_total(batch) for batch in lane.batches.batches.values()]
    assert sizes == [4, 4]  # every first call in one batch, every second call in the next


async def test_a_streamed_call_is_answered_from_its_batch(lane: Lane) -> None:
    module = AskTwice(streamed=True).with_llm(lane.llm)
    report = await evaluate(
        module, dataset(3, echoes=2), exact_match, progress=False, batch=Polls().options()
    )
    assert report.score == 1.0
    assert report.batch is not None and report.batch.rounds == 2


async def test_an_expired_batch_is_raised_by_name(lane: Lane) -> None:
    lane.batches.expire = True
    with pytest.raises(BatchExpired) as caught:
        await evaluate(
            Ask().with_llm(lane.llm),
            dataset(3),
            exact_match,
            progress=False,
            batch=Polls().options(),
        )
    assert "expired" in str(caught.value)
    assert SECRET not in str(caught.value)


async def test_a_failed_batch_is_raised_by_name(lane: Lane) -> None:
    lane.batches.fail = True
    with pytest.raises(BatchFailed) as caught:
        await evaluate(
            Ask().with_llm(lane.llm),
            dataset(3),
            exact_match,
            progress=False,
            batch=Polls().options(),
        )
    assert SECRET not in str(caught.value)
    assert not _answered(lane)  # no request of it was answered


async def test_a_failed_request_fails_its_row_and_the_others_stand(lane: Lane) -> None:
    lane.server.chat.script("echo: q0", Fault.status(500), "echo: q2")
    report = await evaluate(
        Ask().with_llm(lane.llm), dataset(3), exact_match, progress=False, batch=Polls().options()
    )

    assert report.scores == [1.0, 0.0, 1.0]
    error = report.rows[1].error
    assert error is not None and error.startswith("BatchRequestFailed:")
    assert "HTTP 500" in error or "errored" in error
    assert SECRET not in error
    assert [row.error for row in report.rows[::2]] == [None, None]


async def test_waiting_past_max_polls_cancels_the_batch(lane: Lane) -> None:
    lane.batches.polls_before_done = 10
    polls = Polls()
    with pytest.raises(BatchExpired) as caught:
        await evaluate(
            Ask().with_llm(lane.llm),
            dataset(2),
            exact_match,
            progress=False,
            batch=polls.options(max_polls=3),
        )
    assert "3 polls" in str(caught.value)
    assert len(polls.sleeps) == 3
    (batch,) = lane.batches.batches.values()
    assert batch.get("status", batch.get("processing_status")) in ("cancelling", "canceling")


async def test_a_wrong_key_is_a_named_error_without_the_key(lane: Lane) -> None:
    wrong = "sk-wrong-key-0d1e2f"
    if lane.name == "openai":
        llm: Any = OpenAILike("gpt-4o-mini", api_key=wrong, base_url=lane.server.base_url)
    else:
        llm = Anthropic("claude-fake", api_key=wrong, base_url=lane.server.base_url)
    with pytest.raises(pm.errors.PromptimusError) as caught:
        await evaluate(
            Ask().with_llm(llm), dataset(2), exact_match, progress=False, batch=Polls().options()
        )
    text = "".join(_chain(caught.value))
    assert wrong not in text and SECRET not in text
    assert not lane.batches.batches


async def test_a_model_without_a_batch_api_is_refused_before_any_request() -> None:
    with FakeOpenAIServer() as server:
        llm = OpenAILike("gpt-4o-mini", api_key=server.api_key, base_url=server.base_url)
        module = AskTwice().with_llm(llm)
        module.polish.with_llm(ScriptedLLM(["never sent"]))
        with pytest.raises(BatchUnsupported, match="no batch API"):
            await evaluate(module, dataset(2), exact_match, progress=False, batch=True)
        assert server.requests == []


async def test_a_plain_function_with_a_model_without_a_batch_api_sends_nothing() -> None:
    scripted = ScriptedLLM(["never sent"])

    async def ask(question: str) -> str:
        reply = await Ask().with_llm(scripted)(question)
        return str(reply)

    with pytest.raises(BatchUnsupported):
        await evaluate(ask, dataset(2), exact_match, progress=False, batch=Polls().options())
    assert scripted.requests == []


async def test_a_server_without_batch_endpoints_is_batch_unsupported() -> None:
    with FakeAnthropicServer() as elsewhere:  # it has no /v1/files
        llm = OpenAILike("gpt-4o-mini", api_key="sk-x", base_url=f"{elsewhere.base_url}/v1")
        with pytest.raises(BatchUnsupported, match="no batch API"):
            await evaluate(
                Ask().with_llm(llm),
                dataset(2),
                exact_match,
                progress=False,
                batch=Polls().options(),
            )
        assert elsewhere.messages.requests == []


@pytest.mark.parametrize(
    "options",
    [
        {"poll_interval": math.nan},
        {"poll_interval": "30"},
        {"poll_interval": True},
        {"poll_interval": 0},
        {"max_polls": 0},
        {"max_polls": 2.5},
        {"sleep": "asyncio.sleep"},
        {"on_status": 3},
        {"pricing": {"gpt-4o-mini": (math.inf, 1.0)}},
    ],
)
def test_bad_batch_options_are_refused_where_given(options: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument):
        BatchOptions(**options)


async def test_batch_takes_true_false_or_options_and_no_runner() -> None:
    module = Ask().with_llm(ScriptedLLM(["a"]))
    with pytest.raises(InvalidArgument, match="batch must be"):
        await evaluate(module, dataset(1), exact_match, progress=False, batch="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="runner"):
        await evaluate(
            module, dataset(1), exact_match, progress=False, batch=True, runner=ElsewhereRunner()
        )


class ElsewhereRunner:
    """A runner that would run the examples somewhere else (as `RayRunner` does)."""

    async def prepare(self, job: Any) -> None:
        raise AssertionError("batch evaluation must refuse a runner before preparing it")

    async def run(self, job: Any, on_row: Any) -> Any:
        raise AssertionError("never run")


def _total(batch: dict[str, Any]) -> int:
    counts = batch["request_counts"]
    return int(counts["total"] if "total" in counts else sum(counts.values()))


def _answered(lane: Lane) -> bool:
    return bool(lane.server.chat.requests)


def _chain(error: BaseException | None) -> Iterator[str]:
    while error is not None:
        yield f"{error!s} {error!r}"
        error = error.__cause__ or error.__context__


async def test_a_request_error_that_quotes_the_key_is_shown_without_it(lane: Lane) -> None:
    said = {"error": {"message": f"Incorrect API key provided: {SECRET}.", "type": "bad_key"}}
    if lane.name == "anthropic":
        said = {"type": "error", "error": said["error"]}
    lane.server.chat.script(Fault.status(401, body=said), "echo: q1")
    report = await evaluate(
        Ask().with_llm(lane.llm), dataset(2), exact_match, progress=False, batch=Polls().options()
    )
    error = report.rows[0].error
    assert error is not None and error.startswith("BatchRequestFailed:")
    assert "Incorrect API key provided" in error
    assert SECRET not in error
    assert report.scores[1] == 1.0


async def test_cancelling_the_evaluation_cancels_its_batch(lane: Lane) -> None:
    lane.batches.polls_before_done = 1000
    polling = asyncio.Event()

    async def sleep(seconds: float) -> None:
        polling.set()
        await asyncio.Event().wait()  # until cancelled

    running = asyncio.create_task(
        evaluate(
            Ask().with_llm(lane.llm),
            dataset(3),
            exact_match,
            progress=False,
            batch=BatchOptions(sleep=sleep),
        )
    )
    await asyncio.wait_for(polling.wait(), BOUND)  # a guard against hanging, not a timing
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    (batch,) = lane.batches.batches.values()
    assert batch.get("status", batch.get("processing_status")) in ("cancelling", "canceling")


async def test_a_judge_metric_calls_its_model_directly(lane: Lane) -> None:
    from promptimus.evals import LLMJudge

    judge_llm = ScriptedLLM(lambda history, kwargs: '{"score": 1, "feedback": "fine"}')
    judge = LLMJudge().with_llm(judge_llm)  # no batch API: batched, it would be refused
    report = await evaluate(
        Ask().with_llm(lane.llm), dataset(3), judge, progress=False, batch=Polls().options()
    )
    assert report.errors == []
    assert report.score == 1.0
    assert len(judge_llm.requests) == 3
    assert report.metric_usage.requests == 3
    assert report.batch is not None and report.batch.requests == 3  # the module's calls only
