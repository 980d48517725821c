"""`record(path)`: real agent runs against the fake OpenAI server land in the SQLite file as runs
and span trees (module paths, tool calls with arguments and results, messages, usage, cost,
errors); concurrent runs keep their own trees; what finished is written by `close`; no key or
secret reaches the file."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from promptimus import Module
from promptimus.agents.events import FinalResult, NeedsApproval
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.agents.run_state import RunState
from promptimus.board import record
from promptimus.board.store import SCHEMA
from promptimus.errors import InvalidArgument
from promptimus.llms import OpenAILike
from promptimus.llms.cached import CachedLLM
from promptimus.llms.fallback import FallbackLLM
from promptimus.llms.memory_cache import MemoryCache
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools.tool import Tool

KEY = "sk-recorder-test-key-123"
TOKEN = "tok-from-the-environment-456"


def lookup(order: int) -> str:
    """Look an order up."""
    return f"order {order}: 30 EUR"


def agent(srv: FakeOpenAIServer) -> OpenaiToolCallingAgent:
    llm = OpenAILike("fake-model", api_key=KEY, base_url=srv.base_url)
    return OpenaiToolCallingAgent("You help.", [Tool(lookup)], max_steps=5).with_llm(llm)


def table(path: Path, query: str) -> list[dict[str, Any]]:
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in db.execute(query)]
    finally:
        db.close()


async def test_a_run_is_kept_with_its_tree_tool_calls_messages_usage_and_cost(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.chat.script(
        Reply(tool_calls=[ToolCall("lookup", {"order": 7}, id="c1")]), "Order 7 costs 30 EUR."
    )
    path = tmp_path / "runs.sqlite"
    with record(path, pricing={"fake-model": (1.0, 2.0)}):
        await agent(fake_openai).run("How much is order 7?")

    [run] = table(path, "SELECT * FROM runs")
    assert (run["request"], run["status"], json.loads(run["answer"])) == (
        "How much is order 7?",
        "ok",
        "Order 7 costs 30 EUR.",
    )
    spans = table(path, "SELECT * FROM spans ORDER BY started")
    assert [(s["name"], s["kind"]) for s in spans] == [
        ("root", "AGENT"),
        ("root.predictor.prompt", "CHAIN"),
        ("root.predictor.prompt.llm", "LLM"),
        ("root.tools.lookup", "TOOL"),
        ("root.predictor.prompt", "CHAIN"),
        ("root.predictor.prompt.llm", "LLM"),
    ]
    by_id = {s["id"]: s for s in spans}
    tool = spans[3]
    assert by_id[tool["parent_id"]]["name"] == "root"
    assert json.loads(tool["input"]) == {"order": 7}
    assert json.loads(tool["output"]) == "order 7: 30 EUR"
    model_calls = [s for s in spans if s["kind"] == "LLM"]
    sent = json.loads(model_calls[1]["input"])
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert json.loads(model_calls[0]["output"])["tool_calls"][0]["function"]["name"] == "lookup"
    tokens = sum(s["prompt_tokens"] + s["completion_tokens"] for s in model_calls)
    assert run["tokens"] == tokens > 0
    cost = sum(s["prompt_tokens"] * 1.0 + s["completion_tokens"] * 2.0 for s in model_calls) / 1e6
    assert run["cost"] == pytest.approx(cost)
    assert all(s["run_id"] == run["id"] and s["status"] == "ok" for s in spans)


def every_byte(folder: Path) -> bytes:
    """The board file with its WAL and shared-memory files: whatever reached the disk."""
    return b"".join(p.read_bytes() for p in folder.iterdir())


class Broken(Module):
    async def forward(self, text: str) -> str:
        raise ValueError(f"cannot read {text!r} with key {KEY} and token {TOKEN}")


async def test_no_key_or_secret_reaches_the_file(
    tmp_path: Path, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_API_TOKEN", TOKEN)

    def echo_secret(order: int) -> str:
        """Say what the tool holds."""
        return f"order {order} with {TOKEN} and {KEY}"

    llm = OpenAILike("fake-model", api_key=KEY, base_url=fake_openai.base_url)
    leaky = OpenaiToolCallingAgent("You help.", [Tool(echo_secret)]).with_llm(llm)
    fake_openai.chat.script(
        Reply(tool_calls=[ToolCall("echo_secret", {"order": 1}, id="c1")]), f"done {KEY}"
    )
    path = tmp_path / "runs.sqlite"
    with record(path):
        await leaky.run(f"my token is {TOKEN}")
        with pytest.raises(ValueError):
            await Broken()("page")

    written = every_byte(tmp_path)
    assert KEY.encode() not in written and TOKEN.encode() not in written
    errors = [r["error"] for r in table(path, "SELECT error FROM runs") if r["error"]]
    assert errors == ["ValueError: cannot read 'page' with key *** and token ***"]
    assert "[REDACTED]" in json.dumps(table(path, "SELECT input, output FROM spans"))


async def test_concurrent_runs_keep_their_own_trees(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    def reply(body: dict[str, Any]) -> Any:
        messages = body["messages"]
        order = int(messages[1]["content"].split()[-1])
        if messages[-1]["role"] == "tool":
            return f"answer for {order}"
        return Reply(tool_calls=[ToolCall("lookup", {"order": order}, id=f"c{order}")])

    fake_openai.chat.respond_with(reply)
    path = tmp_path / "runs.sqlite"
    with record(path):
        await asyncio.gather(*(agent(fake_openai).run(f"order {n}") for n in range(8)))

    runs = table(path, "SELECT * FROM runs")
    assert sorted(r["request"] for r in runs) == sorted(f"order {n}" for n in range(8))
    for run in runs:
        order = int(run["request"].split()[-1])
        tools = table(path, f"SELECT input FROM spans WHERE run_id = '{run['id']}' AND kind='TOOL'")
        assert [json.loads(t["input"]) for t in tools] == [{"order": order}]
        assert json.loads(run["answer"]) == f"answer for {order}"


async def test_a_finished_run_is_written_by_close_and_flush(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    path = tmp_path / "runs.sqlite"
    recording = record(path, batch_seconds=10)  # nothing would be written for ten seconds
    try:
        await agent(fake_openai).run("first")
        recording.flush()
        assert [r["request"] for r in table(path, "SELECT request FROM runs")] == ["first"]
        await agent(fake_openai).run("second")
    finally:
        recording.close()
    assert sorted(r["request"] for r in table(path, "SELECT request FROM runs")) == [
        "first",
        "second",
    ]
    assert not recording.active
    await agent(fake_openai).run("after close")  # no longer recorded
    assert len(table(path, "SELECT id FROM runs")) == 2


def test_a_folder_is_not_a_board_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="folder"):
        record(tmp_path)
    with pytest.raises(InvalidArgument, match="batch_seconds"):
        record(tmp_path / "runs.sqlite", batch_seconds=float("nan"))


class Keeper(Module):
    """Appends to the list it was given after the call: what was recorded must not change."""

    async def forward(self, notes: list[str]) -> list[str]:
        return [note.upper() for note in notes]


async def test_what_a_call_was_given_is_recorded_as_it_was_then(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    notes = ["one"]
    with record(path, batch_seconds=10) as recording:
        answer = await Keeper()(notes)
        notes.append("added later")  # before the writer thread has read the call
        answer.append("ADDED LATER")
        recording.flush()
    [span] = table(path, "SELECT input, output FROM spans")
    assert (json.loads(span["input"]), json.loads(span["output"])) == (["one"], ["ONE"])


async def test_two_recordings_into_one_file_keep_every_span(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    path = tmp_path / "runs.sqlite"
    for n in range(2):  # as two processes would, one after the other or at once
        with record(path):
            await agent(fake_openai).run(f"run {n}")
    runs = table(path, "SELECT id, request FROM runs ORDER BY started")
    assert [r["request"] for r in runs] == ["run 0", "run 1"]
    spans = table(path, "SELECT id, run_id FROM spans")
    assert len({s["id"] for s in spans}) == len(spans) == 6  # each: agent, prompt, model
    assert {s["run_id"] for s in spans} == {r["id"] for r in runs}


def refund(order: int) -> str:
    """Refund an order."""
    return f"refunded {order}"


def refunding_agent(srv: FakeOpenAIServer) -> OpenaiToolCallingAgent:
    """An agent whose `refund` tool waits for approval."""
    llm = OpenAILike("fake-model", api_key=KEY, base_url=srv.base_url)
    tools = [Tool(refund, requires_approval=True)]
    return OpenaiToolCallingAgent("You refund.", tools).with_llm(llm)


async def test_a_resumed_run_is_linked_to_the_run_that_paused(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    refunds = refunding_agent(fake_openai)
    fake_openai.chat.script(
        Reply(tool_calls=[ToolCall("refund", {"order": 9}, id="r1")]), "Refunded order 9."
    )
    path = tmp_path / "runs.sqlite"
    with record(path):
        paused = await refunds.run("Refund order 9")
        assert paused.status == "needs_approval" and paused.state is not None
        done = await refunds.run(resume=paused.state, approvals={"r1": True})
        assert done.status == "completed"

    first, second = table(path, "SELECT * FROM runs ORDER BY started")
    assert (first["status"], first["paused_state"], first["resumes"]) == (
        "needs_approval",
        paused.state.id,
        None,
    )
    assert (second["status"], second["paused_state"], second["resumes"]) == (
        "ok",
        None,
        paused.state.id,
    )
    assert second["request"] == "Refund order 9"  # the paused run's, not an empty one
    assert json.loads(second["answer"]) == "Refunded order 9."


def test_a_file_from_an_earlier_version_gains_the_new_columns(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE runs (id TEXT PRIMARY KEY, name TEXT NOT NULL, request TEXT NOT NULL "
        "DEFAULT '', status TEXT NOT NULL, started REAL NOT NULL, ended REAL, tokens INTEGER "
        "NOT NULL DEFAULT 0, cost REAL, error TEXT, answer TEXT)"
    )
    db.execute("INSERT INTO runs (id, name, status, started) VALUES ('old', 'root', 'ok', 1.0)")
    db.commit()
    db.close()
    with record(path):
        pass
    [old] = table(path, "SELECT * FROM runs")
    assert (old["id"], old["paused_state"], old["resumes"]) == ("old", None, None)


def test_a_file_that_cannot_be_opened_is_a_named_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="cannot open that file"):
        record(tmp_path / "missing-folder" / "runs.sqlite")
    (tmp_path / "not-sqlite.sqlite").write_bytes(b"this is not a database, just text" * 100)
    with pytest.raises(InvalidArgument, match="cannot open that file"):
        record(tmp_path / "not-sqlite.sqlite")


async def test_two_recordings_at_once_each_keep_whole_runs(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.chat.script(
        Reply(tool_calls=[ToolCall("lookup", {"order": 3}, id="c1")]), "Order 3 costs 30 EUR."
    )
    paths = [tmp_path / "first.sqlite", tmp_path / "second.sqlite"]
    with record(paths[0]), record(paths[1]):
        await agent(fake_openai).run("How much is order 3?")

    for path in paths:
        [run] = table(path, "SELECT * FROM runs")
        assert (run["request"], run["status"]) == ("How much is order 3?", "ok")
        spans = table(path, "SELECT * FROM spans ORDER BY started")
        assert [s["name"] for s in spans] == [
            "root",
            "root.predictor.prompt",
            "root.predictor.prompt.llm",
            "root.tools.lookup",
            "root.predictor.prompt",
            "root.predictor.prompt.llm",
        ]
        ids = {s["id"] for s in spans}
        assert {s["run_id"] for s in spans} == {run["id"]} and run["id"] in ids
        assert all(s["parent_id"] in ids for s in spans[1:])
        model_calls = [s for s in spans if s["kind"] == "LLM"]
        tokens = sum(s["prompt_tokens"] + s["completion_tokens"] for s in model_calls)
        assert run["tokens"] == tokens > 0


class Desk(Module):
    """A module around an agent: the agent's model (and its key) is not the desk's own."""

    def __init__(self, helper: Module) -> None:
        super().__init__()
        self.helper = helper

    async def forward(self, text: str) -> str:
        result = await self.helper.run(text)
        return str(result.output)


async def test_a_key_in_a_run_request_is_redacted_before_any_model_call_is_seen(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    path = tmp_path / "runs.sqlite"
    on_disk: list[bytes] = []
    with record(path, batch_seconds=0) as recording:

        def slow_model(body: dict[str, Any]) -> str:
            recording.flush()  # the run's start is written while the model thinks
            on_disk.append(every_byte(tmp_path))
            return "Keys are secret."

        fake_openai.chat.respond_with(slow_model)
        await Desk(agent(fake_openai))(f"Why does my key {KEY} fail?")

    assert b"running" in on_disk[0] and KEY.encode() not in on_disk[0]
    assert KEY.encode() not in every_byte(tmp_path)
    [run] = table(path, "SELECT request FROM runs")
    assert run["request"] == "Why does my key [REDACTED] fail?"


@pytest.mark.parametrize("wrap", ["fallback", "cached"])
async def test_the_key_of_a_model_behind_a_wrapper_is_redacted(
    tmp_path: Path, fake_openai: FakeOpenAIServer, wrap: str
) -> None:
    inner = OpenAILike("fake-model", api_key=KEY, base_url=fake_openai.base_url)
    llm: Any = FallbackLLM(inner) if wrap == "fallback" else CachedLLM(inner, MemoryCache())
    fake_openai.chat.script(f"your key is {KEY}")
    path = tmp_path / "runs.sqlite"
    with record(path):
        await OpenaiToolCallingAgent("You help.", []).with_llm(llm).run("What is my key?")

    assert KEY.encode() not in every_byte(tmp_path)
    assert json.loads(table(path, "SELECT answer FROM runs")[0]["answer"]) == (
        "your key is [REDACTED]"
    )


class Echo(Module):
    async def forward(self, text: str) -> str:
        return text


async def test_a_secret_set_in_the_environment_while_recording_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.sqlite"
    monkeypatch.delenv("LATE_SERVICE_TOKEN", raising=False)
    with record(path):
        monkeypatch.setenv("LATE_SERVICE_TOKEN", TOKEN)  # a .env file read after record()
        await Echo()(f"the token is {TOKEN}")

    assert TOKEN.encode() not in every_byte(tmp_path)
    [span] = table(path, "SELECT input FROM spans")
    assert json.loads(span["input"]) == "the token is [REDACTED]"


class Totals(BaseModel):
    total: int
    items: list[str]


class Tally(Module):
    async def forward(self, counts: dict[str, int], *, label: dict[str, str]) -> Totals:
        return Totals(total=sum(counts.values()), items=sorted(counts))


async def test_dicts_and_models_changed_after_the_call_are_recorded_as_they_were(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    counts = {"a": 1}
    label = {"name": "before"}
    with record(path, batch_seconds=10) as recording:
        totals = await Tally()(counts, label=label)
        counts["b"] = 2  # before the writer thread has read the call
        label["name"] = "after"
        totals.total = 99
        recording.flush()
    [span] = table(path, "SELECT input, output FROM spans")
    assert json.loads(span["input"]) == {
        "args": [{"a": 1}],
        "kwargs": {"label": {"name": "before"}},
    }
    assert json.loads(span["output"]) == {"total": 1, "items": ["a"]}


class Unprintable(Exception):
    """An error whose text cannot be made (its `__str__` fails)."""

    def __str__(self) -> str:
        raise RuntimeError("no text")


class Fails(Module):
    async def forward(self, text: str) -> str:
        raise Unprintable()


class Pending:
    """A reply object whose `status` cannot be read (a lazy response not loaded yet)."""

    @property
    def status(self) -> str:
        raise RuntimeError("not loaded")


class Lazy(Module):
    async def forward(self, text: str) -> Pending:
        return Pending()


async def test_a_run_whose_values_cannot_be_read_is_still_kept_as_ended(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with record(path, batch_seconds=10):
        with pytest.raises(Unprintable):
            await Fails()("page")
        await Lazy()("later")
        await Echo()("next")

    first, second, third = table(path, "SELECT * FROM runs ORDER BY started")
    assert (first["status"], first["request"]) == ("error", "page")
    assert first["ended"] is not None and first["error"].startswith("Unprintable")
    assert (second["status"], second["ended"] is not None) == ("ok", True)
    assert (third["status"], json.loads(third["answer"])) == ("ok", "next")
    statuses = [s["status"] for s in table(path, "SELECT status FROM spans ORDER BY started")]
    assert statuses == ["error", "ok"]  # the lazy reply's span cannot be made; the others are


FORKED = """
import asyncio, multiprocessing, os, sys
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.board import record
from promptimus.llms import OpenAILike

path, base_url = sys.argv[1], sys.argv[2]


def run(request):
    llm = OpenAILike("fake-model", api_key="sk-forked-key-789", base_url=base_url)
    asyncio.run(OpenaiToolCallingAgent("You help.", []).with_llm(llm).run(request))


recording = record(path, batch_seconds=10)
run("before the fork")
pid = os.fork()
if pid == 0:
    run("in the child")
    sys.exit(0)  # the interpreter's exit writes what the child recorded
_, status = os.waitpid(pid, 0)
child = multiprocessing.get_context("fork").Process(target=run, args=("in a process",))
child.start()  # it ends with os._exit: multiprocessing's exit writes what it recorded
child.join()
run("after the fork")
recording.close()
print("child", os.waitstatus_to_exitcode(status), child.exitcode)
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_records_its_runs_with_span_ids_of_its_own(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    path = tmp_path / "runs.sqlite"
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", FORKED, str(path), fake_openai.base_url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.split() == ["child", "0", "0"], done.stderr
    runs = table(path, "SELECT id, request, status FROM runs ORDER BY started")
    assert [(r["request"], r["status"]) for r in runs] == [
        ("before the fork", "ok"),
        ("in the child", "ok"),
        ("in a process", "ok"),
        ("after the fork", "ok"),
    ]
    spans = table(path, "SELECT run_id FROM spans")
    assert sorted(s["run_id"] for s in spans) == sorted(r["id"] for r in runs for _ in range(3))


class Fanout(Module):
    """Asks a helper and a failing module at once, with `asyncio.gather`: the failure ends
    the call while the helper's model call goes on."""

    def __init__(self, helper: Module) -> None:
        super().__init__()
        self.helper = helper
        self.failing = Broken()
        self.left: list[asyncio.Future[Any]] = []

    async def forward(self, text: str) -> str:
        asked = asyncio.ensure_future(self.helper.run(text))
        self.left.append(asked)
        await asyncio.gather(asked, self.failing(text))
        return "unreachable"


async def test_a_model_call_that_ends_after_its_run_still_counts_in_the_run_tokens(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    path = tmp_path / "runs.sqlite"
    fanout = Fanout(agent(fake_openai))
    with record(path) as recording:
        with pytest.raises(ValueError):
            await fanout("order 5")
        recording.flush()  # the run's end is written before its helper's answer comes
        await fanout.left[0]

    [run] = table(path, "SELECT * FROM runs")
    model_calls = table(path, "SELECT * FROM spans WHERE kind = 'LLM'")
    assert [m["run_id"] for m in model_calls] == [run["id"]]
    tokens = sum(s["prompt_tokens"] + s["completion_tokens"] for s in model_calls)
    assert run["status"] == "error" and run["tokens"] == tokens > 0


class Found(Module):
    async def forward(self, order: int) -> dict[str, Any]:
        return {"order": order, "found": False, "seconds": 3600}


async def test_environment_settings_that_are_not_secrets_leave_values_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")  # a name with TOKEN, not a secret
    monkeypatch.setenv("SESSION_TOKEN_SECONDS", "3600")
    monkeypatch.setenv("SHOP_API_TOKEN", TOKEN)
    path = tmp_path / "runs.sqlite"
    with record(path):
        await Found()(7)
    [span] = table(path, "SELECT output FROM spans")
    assert json.loads(span["output"]) == {"order": 7, "found": False, "seconds": 3600}


async def test_a_secret_with_quotes_or_backslashes_is_redacted_in_json_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    password = 'hunter"2\\door'
    monkeypatch.setenv("SHOP_DB_PASSWORD", password)
    path = tmp_path / "runs.sqlite"
    with record(path):
        await Echo()(f"connect with {password}")
        await Keeper()([password])

    written = every_byte(tmp_path)
    assert password.encode() not in written
    assert json.dumps(password)[1:-1].encode() not in written  # as JSON text holds it
    inputs = [json.loads(s["input"]) for s in table(path, "SELECT input FROM spans")]
    assert inputs == ["connect with [REDACTED]", ["[REDACTED]"]]


async def test_recording_a_file_already_recorded_takes_over_without_doubling_runs(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    first = record(path)  # a notebook cell run twice
    second = record(tmp_path / "." / "runs.sqlite")
    try:
        await Echo()("once")
    finally:
        second.close()
        first.close()
    assert (first.active, second.active) == (False, False)
    assert [r["request"] for r in table(path, "SELECT request FROM runs")] == ["once"]
    assert len(table(path, "SELECT id FROM spans")) == 1


class Later:
    """A value whose text needs a result that was cancelled: `str` raises CancelledError, which
    is not an Exception."""

    def __str__(self) -> str:
        raise asyncio.CancelledError()


class Defers(Module):
    async def forward(self, text: str) -> Later:
        return Later()


async def test_a_value_that_raises_a_base_exception_costs_only_its_own_span(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    with record(path) as recording:
        await Defers()("first")
        recording.flush()
        await Echo()("second")
        recording.flush()
        assert "second" in [r["request"] for r in table(path, "SELECT request FROM runs")]
    assert [r["request"] for r in table(path, "SELECT request FROM runs ORDER BY started")] == [
        "first",
        "second",
    ]


async def test_a_run_under_way_when_the_recording_closes_is_kept_as_it_ends(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    path = tmp_path / "runs.sqlite"
    recording = record(path)

    def closing_model(body: dict[str, Any]) -> str:
        recording.close()  # while the run waits for its model
        return "Order 7 costs 30 EUR."

    fake_openai.chat.respond_with(closing_model)
    result = await agent(fake_openai).run("How much is order 7?")
    assert result.status == "completed" and not recording.active
    recording.flush()
    [run] = table(path, "SELECT * FROM runs")
    assert (run["status"], json.loads(run["answer"])) == ("ok", "Order 7 costs 30 EUR.")
    assert run["ended"] is not None and run["tokens"] > 0
    await Echo()("after close")  # no longer recorded
    recording.flush()
    assert len(table(path, "SELECT id FROM runs")) == 1


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("batch_seconds", True),
        ("batch_seconds", "0.1"),
        ("batch_seconds", float("inf")),
        ("max_value_chars", float("nan")),
        ("max_value_chars", "100"),
        ("max_value_chars", True),
        ("max_value_chars", 10),
    ],
)
def test_options_that_are_not_numbers_in_range_are_named_errors(
    tmp_path: Path, option: str, value: Any
) -> None:
    with pytest.raises(InvalidArgument, match=option):
        record(tmp_path / "runs.sqlite", **{option: value})
    assert not (tmp_path / "runs.sqlite").exists()  # refused before anything was made


@dataclass
class ShopDeps:
    """What the tools need: the shop's database, by its URL (password in it)."""

    dsn: str
    currency: str = "EUR"


async def test_a_password_in_a_url_among_the_values_is_redacted(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    dsn = "postgresql://shop:pg-pass-31415@db.internal:5432/shop"
    fake_openai.chat.script("Order 7 costs 30 EUR.")
    path = tmp_path / "runs.sqlite"
    with record(path):
        await agent(fake_openai).run("How much is order 7?", deps=ShopDeps(dsn))
        await Echo()(f"could not connect to {dsn}")

    assert b"pg-pass-31415" not in every_byte(tmp_path)
    [_, echo] = table(path, "SELECT input FROM spans WHERE name = 'root' ORDER BY started")
    assert json.loads(echo["input"]) == (
        "could not connect to postgresql://shop:[REDACTED]@db.internal:5432/shop"
    )


async def test_a_run_paused_twice_and_resumed_by_stream_from_its_saved_state_is_one_chain(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    def refunds() -> OpenaiToolCallingAgent:  # a fresh agent each time: as another process
        return refunding_agent(fake_openai)

    fake_openai.chat.script(
        Reply(tool_calls=[ToolCall("refund", {"order": 9}, id="r1")]),
        Reply(tool_calls=[ToolCall("refund", {"order": 10}, id="r2")]),
        "Refunded orders 9 and 10.",
    )
    path = tmp_path / "runs.sqlite"
    with record(path):
        first = await refunds().run("Refund orders 9 and 10")
        assert first.state is not None
        saved = RunState.from_json(first.state.to_json())
        events = [e async for e in refunds().stream(resume=saved, approvals={"r1": True})]
        paused = events[-1]
        assert isinstance(paused, NeedsApproval)
        saved = RunState.from_json(paused.state.to_json())
        events = [e async for e in refunds().stream(resume=saved, approvals={"r2": True})]
        assert isinstance(events[-1], FinalResult)

    runs = table(path, "SELECT * FROM runs ORDER BY started")
    assert [(r["status"], r["paused_state"], r["resumes"]) for r in runs] == [
        ("needs_approval", first.state.id, None),
        ("needs_approval", paused.state.id, first.state.id),
        ("ok", None, paused.state.id),
    ]
    assert {r["request"] for r in runs} == {"Refund orders 9 and 10"}
    assert json.loads(runs[-1]["answer"]) == "Refunded orders 9 and 10."


async def eventually(check: Any, what: str, bound: float = 30.0) -> None:
    """Poll `check()` until it holds; `bound` seconds is a hang guard, not a speed claim."""
    deadline = time.monotonic() + bound
    while not check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.01)


async def test_rows_land_when_the_runs_pause_and_when_they_never_do(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    path = tmp_path / "runs.sqlite"
    stop = threading.Event()
    calls = [0]

    def busy() -> None:  # a module call every millisecond: the calls never pause for long
        async def loop() -> None:
            echo = Echo()
            while not stop.is_set():
                await echo("again")
                calls[0] += 1
                time.sleep(0.001)  # noqa: ASYNC251 - blocking on purpose: no await, no pause

        asyncio.run(loop())

    with record(path, batch_seconds=0):
        await agent(fake_openai).run("first")

        def requests() -> list[str]:
            return [r["request"] for r in table(path, "SELECT request FROM runs")]

        await eventually(lambda: requests() == ["first"], "a finished run is written, unflushed")
        worker = threading.Thread(target=busy)
        worker.start()
        try:
            await eventually(lambda: "again" in requests(), "runs that never pause are written")
            assert not stop.is_set() and worker.is_alive()  # written while they went on
        finally:
            stop.set()
            worker.join()
    assert requests().count("again") == calls[0]  # and every one of them by the close


def test_runs_land_in_a_file_whose_spans_table_has_a_column_more(tmp_path: Path) -> None:
    """A file a newer version wrote (its spans table has one more column) still gets every run
    and span: rows are written by column name."""
    path = tmp_path / "runs.sqlite"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute("ALTER TABLE spans ADD COLUMN session TEXT")
    db.commit()
    db.close()
    with record(path):
        asyncio.run(Echo()("first"))
        asyncio.run(Echo()("second"))
    runs = table(path, "SELECT request, status FROM runs ORDER BY started")
    assert runs == [{"request": "first", "status": "ok"}, {"request": "second", "status": "ok"}]
    assert len(table(path, "SELECT * FROM spans")) == 2


def test_a_span_row_the_file_refuses_costs_only_that_row(tmp_path: Path) -> None:
    """A newer file whose extra span column is required: the spans cannot be written there, the
    runs still are."""
    path = tmp_path / "runs.sqlite"
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute(
        "CREATE TRIGGER refuse_one BEFORE INSERT ON spans WHEN NEW.input = '\"bad\"' "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    db.commit()
    db.close()
    with record(path):
        asyncio.run(Echo()("good"))
        asyncio.run(Echo()("bad"))
        asyncio.run(Echo()("also good"))
    runs = table(path, "SELECT request FROM runs ORDER BY started")
    assert [r["request"] for r in runs] == ["good", "bad", "also good"]
    spans = table(path, "SELECT input FROM spans ORDER BY started")
    assert [json.loads(s["input"]) for s in spans] == ["good", "also good"]
