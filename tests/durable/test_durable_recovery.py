"""A durable run survives a kill -9: a worker process runs a 3-tool-call run against the fake
OpenAI server in this process and is SIGKILLed at every step boundary and inside every step;
another process launches DBOS on the same SQLite file and gets the result. The answer equals an
uninterrupted run's, each tool ran once, and no model call whose step finished was sent again."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from durable_crash_worker import TOOLS, WORKFLOW_ID, build_agent, respond
from durable_support import ForkServer, configure, dbos_db, finish, forks, kill_at, start_worker

from promptimus.durable import OUTCOME_UNKNOWN, DurableAgent
from promptimus.observe.provider_calls import register_provider_call_observer
from promptimus.testing import FakeOpenAIServer

__all__ = ["dbos_db", "forks"]

ANSWER = "done: look-ok, charge-ok, note-ok"

# (point, model steps recorded before it)
POINTS = [
    ("after:history:1", 0),
    *[(f"before:model:{k}", k - 1) for k in range(1, 5)],
    *[(f"sent:model:{k}", k - 1) for k in range(1, 5)],
    *[(f"after:model:{k}", k) for k in range(1, 5)],
    *[(f"before:tool:{k}", k) for k in range(1, 4)],
    *[(f"after:tool:{k}", k) for k in range(1, 4)],
    ("after:commit:1", 4),
]


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_openai.chat.respond_with(respond)
    return fake_openai


def model_calls(srv: FakeOpenAIServer) -> Counter[int]:
    """How often each model call of the run (1-4, by the tool results it carries) was sent."""
    return Counter(
        1 + sum(m["role"] == "tool" for m in body["messages"]) for body in srv.chat.requests
    )


class Observed:
    """The LLM calls this process's provider-call observers saw (what usage accounting sees)."""

    def __init__(self) -> None:
        self.calls = 0

    def on_start(self, call: Any) -> None:
        pass

    def on_end(self, call: Any) -> None:
        if call.kind == "llm":
            self.calls += 1


async def recover(db: Path | str, srv: FakeOpenAIServer, log: Path, observed: Observed) -> Any:
    """This process: the same durable agent, DBOS launched (which recovers the run), the
    result awaited."""
    configure(db)
    durable = DurableAgent(
        build_agent(srv.base_url, log, charge_once=False), name="refunds", poll_interval=0.02
    )
    handle = register_provider_call_observer(observed)
    try:
        from dbos import DBOS

        DBOS.launch()
        return await durable.result(WORKFLOW_ID)
    finally:
        handle.remove()


def tool_log(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_an_uninterrupted_run_gives_the_answer_the_recovered_ones_must_equal(
    tmp_path: Path, srv: FakeOpenAIServer
) -> None:
    log = tmp_path / "tools.log"
    worker, _ = start_worker(tmp_path, tmp_path / "runs.sqlite", srv.base_url, log)
    assert finish(worker) == ["status completed", f"answer {ANSWER}"]
    assert tool_log(log) == list(TOOLS)
    assert model_calls(srv) == {1: 1, 2: 1, 3: 1, 4: 1}


@pytest.mark.parametrize(("point", "finished_models"), POINTS, ids=[p for p, _ in POINTS])
async def test_a_run_killed_anywhere_resumes_in_another_process_without_repeating_a_finished_step(
    tmp_path: Path,
    dbos_db: Path,
    srv: FakeOpenAIServer,
    forks: ForkServer,
    point: str,
    finished_models: int,
) -> None:
    log = tmp_path / "tools.log"
    worker, fd = start_worker(tmp_path, dbos_db, srv.base_url, log, stop_at=point, forks=forks)
    assert fd is not None
    kill_at(worker, fd, point)
    sent_before = len(srv.chat.requests)

    observed = Observed()
    result = await recover(dbos_db, srv, log, observed)

    assert result.status == "completed"
    assert result.output.content == ANSWER
    assert tool_log(log) == list(TOOLS)  # each tool ran exactly once, in order
    calls = model_calls(srv)
    if point.startswith("sent:model:"):  # the reply arrived but its step never finished
        interrupted = int(point.rsplit(":", 1)[1])
        assert calls == {k: 2 if k == interrupted else 1 for k in range(1, 5)}
    else:
        assert calls == {1: 1, 2: 1, 3: 1, 4: 1}
    # this process sent (and paid for) only the model calls whose steps had not finished
    assert observed.calls == len(srv.chat.requests) - sent_before == 4 - finished_models
    assert len(result.record.steps) == 4
    assert [s.tool_calls[0].name for s in result.record.steps[:3]] == list(TOOLS)


async def test_a_second_process_gets_the_result_of_a_run_killed_after_the_second_tool(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer
) -> None:
    log = tmp_path / "tools.log"
    worker, fd = start_worker(tmp_path, dbos_db, srv.base_url, log, stop_at="after:tool:2")
    assert fd is not None
    kill_at(worker, fd, "after:tool:2")
    assert tool_log(log) == ["look", "charge"]

    second, _ = start_worker(tmp_path, dbos_db, srv.base_url, log, "--wait")
    assert finish(second) == ["status completed", f"answer {ANSWER}"]
    assert tool_log(log) == list(TOOLS)
    assert model_calls(srv) == {1: 1, 2: 1, 3: 1, 4: 1}


async def test_a_non_idempotent_call_in_flight_at_the_crash_waits_for_approval_and_runs_once_more(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer, forks: ForkServer
) -> None:
    log = tmp_path / "tools.log"
    worker, fd = start_worker(
        tmp_path, dbos_db, srv.base_url, log, "--charge-once", stop_at="effect:charge", forks=forks
    )
    assert fd is not None
    kill_at(worker, fd, "effect:charge")
    assert tool_log(log) == ["look", "charge"]  # it took effect; nobody recorded that

    configure(dbos_db)
    durable = DurableAgent(
        build_agent(srv.base_url, log, charge_once=True), name="refunds", poll_interval=0.02
    )
    from dbos import DBOS

    DBOS.launch()
    paused = await durable.result(WORKFLOW_ID)
    assert paused.status == "needs_approval"
    [pending] = paused.pending
    assert (pending.tool, pending.arguments, pending.reason) == (
        "charge",
        {"order": 42},
        OUTCOME_UNKNOWN,
    )
    assert tool_log(log) == ["look", "charge"]  # not run again by itself

    await durable.approve(WORKFLOW_ID, pending.id, True)
    result = await durable.result(WORKFLOW_ID)
    assert result.output.content == ANSWER
    assert tool_log(log) == ["look", "charge", "charge", "note"]  # once more, as approved


async def test_a_denied_call_whose_outcome_is_unknown_is_not_run_and_the_model_reads_the_denial(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer, forks: ForkServer
) -> None:
    log = tmp_path / "tools.log"
    worker, fd = start_worker(
        tmp_path, dbos_db, srv.base_url, log, "--charge-once", stop_at="effect:charge", forks=forks
    )
    assert fd is not None
    kill_at(worker, fd, "effect:charge")

    configure(dbos_db)
    durable = DurableAgent(
        build_agent(srv.base_url, log, charge_once=True), name="refunds", poll_interval=0.02
    )
    from dbos import DBOS

    DBOS.launch()
    paused = await durable.result(WORKFLOW_ID)
    await durable.approve(WORKFLOW_ID, paused.pending[0].id, "it already went through")
    result = await durable.result(WORKFLOW_ID)

    assert tool_log(log) == ["look", "charge", "note"]
    denial = [m for m in srv.chat.requests[-1]["messages"] if m["role"] == "tool"][1]["content"]
    assert "it already went through" in denial
    assert result.output.content.startswith("done: look-ok, ")
    assert "it already went through" in result.output.content


async def test_a_run_paused_for_approval_waits_without_a_process_and_continues_after_a_restart(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer, forks: ForkServer
) -> None:
    log = tmp_path / "tools.log"
    worker, _ = start_worker(tmp_path, dbos_db, srv.base_url, log, "--approve-charge", forks=forks)
    assert finish(worker) == ["status needs_approval"]  # and the process is gone
    assert tool_log(log) == ["look"]

    configure(dbos_db)
    durable = DurableAgent(
        build_agent(srv.base_url, log, charge_once=False, approve_charge=True),
        name="refunds",
        poll_interval=0.02,
    )
    from dbos import DBOS

    DBOS.launch()  # the run is waiting again, in this process
    paused = await durable.result(WORKFLOW_ID)
    assert [(p.id, p.tool) for p in paused.pending] == [("call_2", "charge")]
    await durable.approve(WORKFLOW_ID, "call_2", True)
    result = await durable.result(WORKFLOW_ID)
    assert result.output.content == ANSWER
    assert tool_log(log) == list(TOOLS)
    assert model_calls(srv) == {1: 1, 2: 1, 3: 1, 4: 1}


async def test_a_run_killed_after_the_second_tool_resumes_on_postgresql(
    tmp_path: Path, postgres_url: str, srv: FakeOpenAIServer, forks: ForkServer
) -> None:
    log = tmp_path / "tools.log"
    try:
        worker, fd = start_worker(
            tmp_path, postgres_url, srv.base_url, log, stop_at="after:tool:2", forks=forks
        )
        assert fd is not None
        kill_at(worker, fd, "after:tool:2")
        observed = Observed()
        result = await recover(postgres_url, srv, log, observed)
    finally:
        from dbos import DBOS

        DBOS.destroy(destroy_registry=True)
    assert result.output.content == ANSWER
    assert tool_log(log) == list(TOOLS)
    assert model_calls(srv) == {1: 1, 2: 1, 3: 1, 4: 1}
    assert observed.calls == 2
