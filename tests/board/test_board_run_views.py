"""What a run shows on the board: a run a guardrail blocked shows the verdict, not a traceback,
and its guardrail's span carries the guardrail's name; a run made in a stored conversation shows
its session and the conversation links to its runs; a module called with a keyword (as
`evaluate` calls it) shows its request as text."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import promptimus as pm
from promptimus import Module
from promptimus.agents import OpenaiToolCallingAgent
from promptimus.board import record
from promptimus.board.app import BoardConfig, build_app
from promptimus.errors import GuardrailTripped
from promptimus.guardrails import InputGuardrail, Verdict
from promptimus.llms import OpenAILike
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import FakeOpenAIServer

BASE = "http://127.0.0.1:8321"


def client(config: BoardConfig) -> TestClient:
    return TestClient(build_app(config), base_url=BASE, follow_redirects=False)


def run_ids(board: TestClient, address: str = "/runs") -> list[str]:
    return re.findall(r'href="/runs/([0-9a-f]+)"', board.get(address).text)


def no_refunds(text: str) -> Verdict:
    return Verdict.block("refunds go through the shop's form") if "refund" in text else True


async def blocked_run(srv: FakeOpenAIServer, path: Path) -> None:
    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=srv.base_url)
    agent = OpenaiToolCallingAgent("Help.", [], guardrails=[InputGuardrail(no_refunds)])
    with record(path), pytest.raises(GuardrailTripped):
        await agent.with_llm(llm).run("refund order 42")


def test_a_blocked_run_shows_the_verdict_and_its_guardrail_by_name(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    path = tmp_path / "runs.sqlite"
    asyncio.run(blocked_run(fake_openai, path))
    with client(BoardConfig(path)) as board:
        listed = board.get("/runs").text
        [run_id] = run_ids(board)
        page = board.get(f"/runs/{run_id}").text
    assert "badge blocked" in listed
    assert "refunds go through the shop&#x27;s form" in page
    assert "Traceback" not in page
    spans = re.findall(r"<span class=kind>\w+</span> ([\w.]+)</a>", page)
    assert "root.guardrails.no_refunds" in spans and "root.guardrails.0" not in spans


class Echo(Module):
    async def forward(self, text: str) -> str:
        return text.upper()


async def chat_in_a_session(srv: FakeOpenAIServer, store_path: Path, runs: Path) -> None:
    store = SQLiteSessionStore(store_path)
    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=srv.base_url)
    srv.chat.script("Hello Alice.", "Hello stranger.")
    try:
        with record(runs):
            async with pm.Session("team/alice", store=store):
                await OpenaiToolCallingAgent("Be brief.").with_llm(llm)("hello from alice")
            await OpenaiToolCallingAgent("Be brief.").with_llm(llm)("outside any conversation")
    finally:
        await store.aclose()


def test_a_run_shows_its_session_and_the_conversation_links_to_its_runs(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    store, runs = tmp_path / "app.db", tmp_path / "runs.sqlite"
    asyncio.run(chat_in_a_session(fake_openai, store, runs))
    with client(BoardConfig(runs, sessions=str(store))) as board:
        listed = board.get("/runs").text
        assert "team/alice" in listed
        conversation = board.get("/conversations/team%2Falice").text
        [linked] = re.findall(r'href="/runs/([0-9a-f]+)"', conversation)
        page = board.get(f"/runs/{linked}").text
    assert "hello from alice" in page and "team/alice" in page
    assert "outside any conversation" not in page


def test_a_module_called_with_a_keyword_shows_its_request_as_text(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with record(path):
        asyncio.run(Echo()(text="what evaluate sends"))
    with client(BoardConfig(path)) as board:
        listed = board.get("/runs").text
    assert ">what evaluate sends</a>" in listed


def redact(text: str) -> Verdict:
    return Verdict.replace(text.replace("hunter2", "[redacted]"))


@pytest.mark.parametrize("parallel", [False, True], ids=["waited", "parallel"])
def test_the_runs_file_keeps_the_request_as_an_input_guardrail_redacted_it(
    tmp_path: Path, fake_openai: FakeOpenAIServer, parallel: bool
) -> None:
    path = tmp_path / "runs.sqlite"
    fake_openai.chat.script("Noted.")

    async def main() -> None:
        llm = OpenAILike("fake-model", api_key="sk-fake", base_url=fake_openai.base_url)
        guard = InputGuardrail(redact, parallel=parallel)
        agent = OpenaiToolCallingAgent("Help.", [], guardrails=[guard]).with_llm(llm)
        with record(path):
            await agent.run("my password is hunter2")

    asyncio.run(main())
    with sqlite3.connect(path) as db:
        (request,) = db.execute("SELECT request FROM runs").fetchone()
        inputs = [
            value
            for name, value in db.execute("SELECT name, input FROM spans")
            if name == "root" or name.startswith("root.guardrails")
        ]
    assert "hunter2" not in request and "[redacted]" in request
    # the run's and the guardrail's spans (a parallel check's first model request did go out
    # with the text: its spans record what was sent)
    assert len(inputs) == 2 and not any("hunter2" in (value or "") for value in inputs)
    with client(BoardConfig(path)) as board:
        listed = board.get("/runs").text
    assert "hunter2" not in listed and "my password is [redacted]" in listed
