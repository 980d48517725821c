"""A run's page shows what its tools reported while they ran (`ctx.progress(...)`): per tool
call, the latest message and fraction and the list, escaped and redacted, kept to a bounded
number per run, and already while the run is still running."""

from __future__ import annotations

import asyncio
import html
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.board import record
from promptimus.board.app import BoardConfig, build_app
from promptimus.llms import ScriptedLLM
from promptimus.tools import RunContext

S = ScriptedLLM


def run_page(path: Path) -> str:
    with TestClient(build_app(BoardConfig(path)), base_url="http://127.0.0.1:8321") as board:
        [run_id] = re.findall(r'href="/runs/([0-9a-f]+)"', board.get("/runs").text)
        return board.get(f"/runs/{run_id}").text


def progress_of(page: str) -> str:
    """The page's Tool progress section, tags removed."""
    assert "<h2>Tool progress</h2>" in page
    part = page.split("<h2>Tool progress</h2>", 1)[1].split("<h2>", 1)[0]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", part)).split())


def run_agent(path: Path, tool: Any, *, calls: int = 1) -> None:
    script: list[Any] = [S.tool_call(tool.__name__, {}, id=f"call_{n}") for n in range(calls)]
    agent = OpenaiToolCallingAgent("p", [tool]).with_llm(S([*script, "Done."]))
    with record(path):
        asyncio.run(agent.run("go"))


async def crawl(ctx: RunContext[Any]) -> str:
    """Reads three pages."""
    for page in range(3):
        ctx.progress(f"reading page {page + 1} of 3", fraction=(page + 1) / 3)
    return "read 3"


def test_the_page_lists_each_report_with_its_fraction_under_its_tool_call(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    run_agent(path, crawl)
    shown = progress_of(run_page(path))
    assert "crawl" in shown and "call_0" in shown
    assert "latest: reading page 3 of 3 (100%)" in shown
    for page, percent in ((1, 33), (2, 67), (3, 100)):
        assert f"reading page {page} of 3 {percent}%" in shown
    assert shown.index("reading page 1") < shown.index("reading page 2 of 3 67%")


async def two_crawls(ctx: RunContext[Any]) -> str:
    """Reports once per call, without a fraction."""
    ctx.progress(f"working on {ctx.tool_call_id}")
    return "ok"


def test_two_tool_calls_each_show_their_own_progress(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    run_agent(path, two_crawls, calls=2)
    page = run_page(path)
    blocks = re.findall(r"<div class=progress>(.*?)</div>", page, re.S)
    texts = [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", b)).split()) for b in blocks]
    assert len(texts) == 2
    assert "call_0" in texts[0] and "working on call_0" in texts[0] and "call_1" not in texts[0]
    assert "call_1" in texts[1] and "working on call_1" in texts[1]


async def hostile(ctx: RunContext[Any]) -> str:
    """Reports a message that is markup, holding a secret."""
    ctx.progress("<script>alert('x')</script> using sk-live-0123456789abcdef", fraction=0.5)
    return "ok"


def test_a_hostile_message_is_escaped_and_a_secret_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CRAWLER_API_KEY", "sk-live-0123456789abcdef")
    path = tmp_path / "runs.sqlite"
    run_agent(path, hostile)
    page = run_page(path)
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert" in page
    assert "sk-live-0123456789abcdef" not in page
    assert "[REDACTED]" in progress_of(page)
    with sqlite3.connect(path) as db:
        stored = [row[0] for row in db.execute("SELECT message FROM tool_progress")]
    assert stored and all("sk-live" not in text for text in stored)


def test_a_chatty_tool_keeps_at_most_the_cap_the_latest_ones(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with record(path) as recording:

        def chatty(ctx: RunContext[Any]) -> str:
            """Reports 500 times, one long message among them, written in several batches."""
            ctx.progress("x" * 100_000)
            for n in range(500):
                ctx.progress(f"step {n + 1}", fraction=(n + 1) / 500)
                if n % 150 == 0:
                    recording.flush()
            return "ok"

        agent = OpenaiToolCallingAgent("p", [chatty]).with_llm(
            S([S.tool_call("chatty", {}, id="call_0"), "Done."])
        )
        asyncio.run(agent.run("go"))
    with sqlite3.connect(path) as db:
        messages = [row[0] for row in db.execute("SELECT message FROM tool_progress ORDER BY id")]
    assert len(messages) == 200
    assert messages[0] == "step 301" and messages[-1] == "step 500"
    assert "latest: step 500 (100%)" in progress_of(run_page(path))


async def long_message(ctx: RunContext[Any]) -> str:
    """Reports one very long message."""
    ctx.progress("x" * 100_000)
    return "ok"


def test_a_long_message_is_cut_saying_how_much(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    run_agent(path, long_message)
    with sqlite3.connect(path) as db:
        [message] = [row[0] for row in db.execute("SELECT message FROM tool_progress")]
    assert message.startswith("xxx") and len(message) < 1000
    assert "[truncated 99500 characters]" in message


def test_a_running_run_shows_its_progress_so_far(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    reported, release = threading.Event(), threading.Event()

    def slow(ctx: RunContext[Any]) -> str:
        """Reports, then waits to be let go."""
        ctx.progress("halfway there", fraction=0.5)
        reported.set()
        release.wait(30)
        return "ok"

    agent = OpenaiToolCallingAgent("p", [slow]).with_llm(
        S([S.tool_call("slow", {}, id="call_9"), "Done."])
    )
    with record(path) as recording:
        runner = threading.Thread(target=lambda: asyncio.run(agent.run("go")))
        runner.start()
        try:
            assert reported.wait(30)
            recording.flush()
            page = run_page(path)
        finally:
            release.set()
            runner.join(30)
    assert "badge running" in page
    assert 'data-live="1"' in page and "<div id=live>" in page  # fetched again while it runs
    assert "latest: halfway there (50%)" in progress_of(page)
    assert "call_9" in progress_of(page)
    ended = run_page(path)
    assert "latest: halfway there (50%)" in progress_of(ended)  # kept once it ended
    assert "badge ok" in ended and 'data-live="1"' not in ended


def test_a_file_from_before_the_table_shows_its_runs_and_gains_it(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    run_agent(path, crawl)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE tool_progress")
    page = run_page(path)
    assert "Done." in page and "Tool progress" not in page and "cannot be read" not in page
    run_agent(path, hostile)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM tool_progress").fetchone() == (1,)
