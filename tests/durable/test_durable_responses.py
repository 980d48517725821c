"""A durable run on the Responses API keeps its reasoning across a crash: a worker process runs
the 3-tool-call run on `OpenAIResponses` (each reply a reasoning item before its call) and is
SIGKILLed; this process recovers it from DBOS. The requests it sends carry the reasoning items
the dead process received, encrypted content and all, each in place before the call it led to,
with no id the server did not keep, each call paired with its output; the fake Responses API
verifies the encrypted content, so a lost or altered item would be refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from durable_crash_worker import TOOLS, WORKFLOW_ID, build_agent, respond_responses
from durable_support import ForkServer, configure, dbos_db, forks, kill_at, start_worker

from promptimus.durable import DurableAgent
from promptimus.testing import FakeOpenAIServer

__all__ = ["dbos_db", "forks"]

ANSWER = "done: look-ok, charge-ok, note-ok"


@pytest.fixture
def srv(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_openai.responses.respond_with(respond_responses)
    return fake_openai


def sent_for(srv: FakeOpenAIServer, call: int) -> list[dict[str, Any]]:
    """The requests of model call `call` (1-4: by the call outputs they carry)."""
    return [
        body
        for body in srv.responses.requests
        if 1 + sum(i.get("type") == "function_call_output" for i in body["input"]) == call
    ]


def kinds(body: dict[str, Any]) -> list[str]:
    return [item.get("type", item.get("role")) for item in body["input"]]


async def recover(db: Path, srv: FakeOpenAIServer, log: Path) -> Any:
    configure(db)
    agent = build_agent(srv.base_url, log, charge_once=False, responses=True)
    durable = DurableAgent(agent, name="refunds", poll_interval=0.02)
    from dbos import DBOS

    DBOS.launch()
    return await durable.result(WORKFLOW_ID)


@pytest.mark.parametrize("point", ["after:model:2", "sent:model:2", "after:tool:2"])
async def test_the_reasoning_round_trip_survives_a_crash_and_recovery(
    tmp_path: Path, dbos_db: Path, srv: FakeOpenAIServer, forks: ForkServer, point: str
) -> None:
    log = tmp_path / "tools.log"
    worker, fd = start_worker(
        tmp_path, dbos_db, srv.base_url, log, "--responses", stop_at=point, forks=forks
    )
    assert fd is not None
    kill_at(worker, fd, point)
    before = len(srv.responses.requests)

    result = await recover(dbos_db, srv, log)

    assert result.status == "completed" and result.output.content == ANSWER
    assert log.read_text().split() == list(TOOLS)
    assert [len(sent_for(srv, k)) for k in (1, 2, 3, 4)] == [
        1,
        2 if point.startswith("sent:") else 1,
        1,
        1,
    ]
    assert len(srv.responses.requests) > before  # the recovering process sent the rest
    last = srv.responses.requests[-1]
    assert kinds(last) == [
        "system",
        "user",
        *["reasoning", "function_call", "function_call_output"] * 3,
    ]
    items = last["input"]
    reasoning = [item for item in items if item.get("type") == "reasoning"]
    assert [item["summary"][0]["text"] for item in reasoning] == ["step 1", "step 2", "step 3"]
    assert all(item["encrypted_content"].startswith("gAAAA") for item in reasoning)
    assert len({item["id"] for item in reasoning}) == 3
    calls = [item for item in items if item.get("type") == "function_call"]
    outputs = [item for item in items if item.get("type") == "function_call_output"]
    assert [c["call_id"] for c in calls] == [o["call_id"] for o in outputs]
    assert all("id" not in item for item in calls + outputs)  # none the server did not keep
    assert srv.responses.stored == {}
