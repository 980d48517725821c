"""A durable run's guardrail checks are steps: each check's verdicts are recorded, and a run
that a crash interrupted replays them instead of checking again. The guardrails here decide one
way on their first call and the other way on any later one (a judge that changes its mind), so a
recovered run that checked again would send another request text, run a refused tool or fail."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS
from durable_crash_worker import REQUEST, WORKFLOW_ID, build_agent, respond
from durable_support import ForkServer, configure, dbos_db, forks, kill_at, start_worker
from fake_llm import make_llm

import promptimus as pm
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.dto.run_record import GuardrailRecord
from promptimus.durable import DurableAgent
from promptimus.errors import DurableInputMismatch, GuardrailTripped
from promptimus.guardrails import InputGuardrail, OutputGuardrail, ToolGuardrail, Verdict
from promptimus.llms import OpenAILike
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall

__all__ = ["dbos_db", "forks"]

REFUSAL = "Error: Not run: the guardrail 'charge_limit' refused this call: over the limit"
ANSWER = f"done: look-ok, {REFUSAL}, note-ok [reviewed]"
SCREENED = f"{REQUEST} [screened]"

# what the guardrails decided, in order, in every execution of the run
VERDICTS = [
    GuardrailRecord("root.guardrails.0", "input", "replace", None, 0),
    GuardrailRecord("root.guardrails.1", "input", "allow", None, 0),
    GuardrailRecord("root.guardrails.2", "tool", "block", "over the limit", 1, "call_2"),
    GuardrailRecord("root.guardrails.3", "output", "replace", None, 3),
]


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_openai.chat.respond_with(respond)
    return fake_openai


def checks(guard_log: Path) -> Counter[str]:
    """How often each guardrail position was checked, in any process."""
    return Counter(guard_log.read_text().split() if guard_log.exists() else [])


def durable_agent(srv: FakeOpenAIServer, tmp_path: Path) -> DurableAgent[Any]:
    agent = build_agent(
        srv.base_url, tmp_path / "tools.log", charge_once=False, guards=tmp_path / "guards.log"
    )
    return DurableAgent(agent, name="refunds", poll_interval=0.02)


def assert_requests_follow_one_conversation(srv: FakeOpenAIServer) -> None:
    """Each model call was sent once, every one with the screened request, and each request
    carries the one before it: the run never took another path."""
    bodies = [body["messages"] for body in srv.chat.requests]
    assert len(bodies) == 4
    for messages in bodies:
        assert [m["content"] for m in messages if m["role"] == "user"] == [SCREENED]
    for before, after in pairwise(bodies):
        assert after[: len(before)] == before
    refusals = [m["content"] for m in bodies[-1] if m["role"] == "tool"]
    assert refusals == ["look-ok", REFUSAL, "note-ok"]


async def test_each_check_of_a_durable_run_is_a_step_whose_verdicts_the_record_keeps(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer
) -> None:
    configure(dbos_db)
    durable = durable_agent(srv, tmp_path)
    DBOS.launch()

    result = await durable.run(REQUEST, workflow_id=WORKFLOW_ID)

    assert result.output.content == ANSWER
    assert result.record.guardrails == VERDICTS
    assert checks(tmp_path / "guards.log") == {"input": 1, "parallel": 1, "tool": 1, "output": 1}
    assert (tmp_path / "tools.log").read_text().split() == ["look", "note"]
    assert_requests_follow_one_conversation(srv)
    steps = await DBOS.list_workflow_steps_async(WORKFLOW_ID)
    names = [step["function_name"] for step in steps]
    assert names.count("promptimus.guardrail") == 4
    # the checks before the first model request come first, the parallel one's id taken when
    # it started, before the memory read
    assert names[:4] == [
        "promptimus.guardrail",
        "promptimus.guardrail",
        "promptimus.history",
        "promptimus.model",
    ]
    recorded = [step["output"] for step in steps if step["function_name"] == "promptimus.guardrail"]
    assert [[v["action"] for v in verdicts] for verdicts in recorded] == [
        ["replace"],
        ["allow"],
        ["block"],
        ["replace"],
    ]
    assert recorded[0] == [
        {
            "guard": 0,
            "name": "screen_request",
            "action": "replace",
            "reason": None,
            "text": f"{SCREENED}",
            "stop": False,
        }
    ]


@pytest.mark.parametrize("point", ["before:tool:1", "before:tool:2", "after:commit:1"])
async def test_a_recovered_run_replays_the_verdicts_instead_of_checking_again(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer, forks: ForkServer, point: str
) -> None:
    guard_log, tool_log = tmp_path / "guards.log", tmp_path / "tools.log"
    worker, fd = start_worker(
        tmp_path,
        dbos_db,
        srv.base_url,
        tool_log,
        "--guards",
        str(guard_log),
        stop_at=point,
        forks=forks,
    )
    assert fd is not None
    kill_at(worker, fd, point)
    before = checks(guard_log)
    assert before["input"] == before["parallel"] == 1

    configure(dbos_db)
    durable = durable_agent(srv, tmp_path)
    DBOS.launch()  # recovers the run in this process
    result = await durable.result(WORKFLOW_ID)

    assert result.status == "completed"
    assert result.output.content == ANSWER
    assert result.record.guardrails == VERDICTS
    # each position was checked once, across both processes
    assert checks(guard_log) == {"input": 1, "parallel": 1, "tool": 1, "output": 1}
    assert tool_log.read_text().split() == ["look", "note"]  # the refused call never ran
    assert_requests_follow_one_conversation(srv)


def echo(body: dict[str, Any]) -> Reply:
    """The model answers with the last user message it was sent."""
    said = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
    return Reply(content=f"You said: {said}")


async def test_a_parallel_check_that_replaced_the_request_replays_in_a_run_executed_again(
    dbos_db: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.chat.respond_with(echo)
    asked: list[str] = []

    def review(text: str) -> Verdict:
        asked.append(text)
        return Verdict.replace(text.upper()) if len(asked) == 1 else Verdict.block("no")

    guard = InputGuardrail(review, parallel=True)
    agent = OpenaiToolCallingAgent("You echo.", [], guardrails=[guard]).with_llm(
        make_llm(fake_openai)
    )
    configure(dbos_db)
    durable = DurableAgent(agent, name="echo")
    DBOS.launch()
    result = await durable.run("hello", workflow_id="echo-1")
    assert result.output.content == "You said: HELLO"
    steps = await DBOS.list_workflow_steps_async("echo-1")

    # the workflow executed again from its last model step: what came before is replayed, so
    # the check, whose step id was taken before the first model request's, is not asked again
    last_model = max(s["function_id"] for s in steps if s["function_name"] == "promptimus.model")
    forked = await DBOS.fork_workflow_async("echo-1", last_model)
    again = await forked.get_result()

    assert asked == ["hello"]
    assert again.output.content == "You said: HELLO"
    assert again.record.guardrails == result.record.guardrails
    assert [g.action for g in again.record.guardrails] == ["replace"]
    replayed = await DBOS.list_workflow_steps_async(forked.workflow_id)
    assert [s["function_name"] for s in replayed] == [s["function_name"] for s in steps]


class Judge(pm.Module):
    """A judge: its own model decides whether an answer may go out."""

    def __init__(self) -> None:
        super().__init__()
        self.prompt = pm.Prompt("Is this answer polite? Answer yes or no.")

    async def forward(self, text: str) -> Verdict:
        reply = await self.prompt([pm.Message(role="user", content=text)])
        polite = reply.content.strip().lower().startswith("yes")
        return Verdict.allow() if polite else Verdict.replace("Sorry, I cannot say that.")


async def test_a_judge_is_asked_once_and_paid_once_in_a_run_executed_again(
    dbos_db: Path, fake_openai: FakeOpenAIServer
) -> None:
    def answer(body: dict[str, Any]) -> Reply:
        if body["model"] == "judge":  # it finds the first answer rude, any later one polite
            judged = sum(b["model"] == "judge" for b in fake_openai.chat.requests)
            return Reply(content="no" if judged == 1 else "yes")
        return Reply(content="Go away.")

    fake_openai.chat.respond_with(answer)
    judge = Judge().with_llm(
        OpenAILike("judge", api_key=fake_openai.api_key, base_url=fake_openai.base_url)
    )
    agent = OpenaiToolCallingAgent("You help.", [], guardrails=[OutputGuardrail(judge)])
    agent.with_llm(make_llm(fake_openai))
    configure(dbos_db)
    durable = DurableAgent(agent, name="polite")
    DBOS.launch()
    result = await durable.run("Hello", workflow_id="p-1")
    assert result.output.content == "Sorry, I cannot say that."
    steps = await DBOS.list_workflow_steps_async("p-1")
    [commit] = [s["function_id"] for s in steps if s["function_name"] == "promptimus.commit"]

    # executed again from its commit: the judge's verdict is replayed, not asked for again
    forked = await DBOS.fork_workflow_async("p-1", commit)
    again = await forked.get_result()

    assert again.output.content == "Sorry, I cannot say that."
    assert again.record.guardrails == result.record.guardrails
    assert [b["model"] for b in fake_openai.chat.requests] == ["fake-model", "judge"]


async def test_a_recorded_verdict_whose_guardrail_is_gone_stops_the_run_executed_again(
    dbos_db: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.chat.respond_with(echo)

    def screen(text: str) -> Verdict:
        return Verdict.replace(text.upper())

    def other(text: str) -> Verdict:
        return Verdict.allow()

    agent = OpenaiToolCallingAgent("You echo.", [], guardrails=[InputGuardrail(screen)])
    agent.with_llm(make_llm(fake_openai))
    configure(dbos_db)
    durable = DurableAgent(agent, name="echo")
    DBOS.launch()
    assert (await durable.run("hello", workflow_id="e-1")).output.content == "You said: HELLO"
    steps = await DBOS.list_workflow_steps_async("e-1")
    [model] = [s["function_id"] for s in steps if s["function_name"] == "promptimus.model"]

    agent.guardrails[0] = InputGuardrail(other)  # changed under a run still to be executed
    forked = await DBOS.fork_workflow_async("e-1", model)
    with pytest.raises(DurableInputMismatch, match=r"'screen'.*now has 'other'"):
        await forked.get_result()


async def test_a_durable_run_a_guardrail_stopped_raises_its_guardrail_tripped_wherever_read(
    dbos_db: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.chat.script(Reply(tool_calls=[ToolCall("refund", {"order": 42}, id="c1")]))

    def refund(order: int) -> str:
        """Refund an order."""
        return "refunded"

    limit = ToolGuardrail(lambda name, args: Verdict.block("over the limit", stop=True))
    agent = OpenaiToolCallingAgent("You refund.", [refund], guardrails=[limit]).with_llm(
        make_llm(fake_openai)
    )
    configure(dbos_db)
    durable = DurableAgent(agent, name="refunds")
    DBOS.launch()

    with pytest.raises(GuardrailTripped, match="over the limit") as raised:
        await durable.run("Refund order 42", workflow_id="t-1")
    # read back from the database, as another process reads it
    with pytest.raises(GuardrailTripped, match="over the limit") as read:
        await durable.result("t-1")
    for error in (raised.value, read.value):
        assert (error.guard, error.kind, error.reason, error.tool) == (
            "root.guardrails.<lambda>",
            "tool",
            "over the limit",
            "refund",
        )
