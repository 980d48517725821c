"""The board as a person sees it, in a real Chromium (Debian's, driven by Playwright): real runs
recorded against the fake OpenAI server, a real `fit`, a real durable run paused on a tool that
requires approval (SQLite DBOS, in a worker process), a SQLite session store and two
checkpoints; then every page is opened, read and clicked. No page writes a console error."""

from __future__ import annotations

import asyncio
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from board_support import Board, Console, board_process, chromium_page, screenshot
from locations import SUPPORT
from optim_task import GOOD, PARTIAL, SILENT, Task, dataset, fence, make_student, metric

import promptimus as pm
from promptimus import Module
from promptimus.agents.openai_agent import OpenaiToolCallingAgent
from promptimus.board import record
from promptimus.llms import OpenAILike
from promptimus.llms.scripted import ScriptedLLM
from promptimus.modules.prompt import Prompt
from promptimus.optim import Reflective, fit
from promptimus.sessions import SQLiteSessionStore
from promptimus.testing import FakeOpenAIServer, Reply, ToolCall
from promptimus.tools.tool import Tool

WORKER = SUPPORT / "board_durable_worker.py"
LINE_BOUND = 120.0  # seconds a worker may take to print its next line (a hang guard)


def lookup(order: int) -> str:
    """Look an order up."""
    return f"order {order}: 30 EUR, shipped"


class StockCheck(Module):
    """A module that breaks: the run shows where."""

    async def forward(self, item: str) -> str:
        raise RuntimeError(f"the stock service is down for {item}")


async def record_runs(srv: FakeOpenAIServer, path: Path) -> None:
    llm = OpenAILike("fake-model", api_key="sk-board-test-key", base_url=srv.base_url)
    agent = OpenaiToolCallingAgent("You help with orders.", [Tool(lookup)], max_steps=5)
    agent.with_llm(llm)
    srv.chat.script(
        Reply(tool_calls=[ToolCall("lookup", {"order": 42}, id="c1")]),
        "Order 42 costs 30 EUR and has shipped.",
    )
    with record(path, pricing={"fake-model": (0.15, 0.6)}):
        await agent.run("Where is order 42?")
        with pytest.raises(RuntimeError):
            await StockCheck()("blue mug")


async def run_fit(folder: Path) -> None:
    teacher = ScriptedLLM([fence(SILENT), fence(GOOD), fence(PARTIAL)] * 5, model_name="teacher")
    train, val = dataset()[:8], dataset()[8:]
    await fit(
        Task(make_student()),
        train,
        metric,
        optimizer=Reflective(teacher=teacher, minibatch_size=4),
        valset=val,
        budget=40,
        checkpoint_dir=folder,
        progress=False,
    )


async def chat(srv: FakeOpenAIServer, path: Path) -> None:
    store = SQLiteSessionStore(path)
    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=srv.base_url)
    srv.chat.script("Hello Alice, how can I help?", "Your order ships on Monday.")
    try:
        for text in ("Hi, I'm Alice", "When does my order ship?"):
            async with pm.Session("alice", store=store):
                await OpenaiToolCallingAgent("You are friendly.").with_llm(llm)(text)
    finally:
        await store.aclose()


def write_checkpoints(folder: Path) -> None:
    folder.mkdir()
    Prompt("Answer briefly.").save(folder / "v1.toml")
    Prompt("Answer briefly and politely.\nCite the order number.").save(folder / "v2.toml")


class Lines:
    """A process's stdout, line by line, with a bound on each wait."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout
        threading.Thread(target=lambda: [self.lines.put(x) for x in stdout], daemon=True).start()

    def next(self) -> str:
        return self.lines.get(timeout=LINE_BOUND).strip()


@dataclass
class World:
    board: Board
    worker: subprocess.Popen[str]
    worker_lines: Lines
    effects: Path
    shots: Path


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    folder = tmp_path_factory.mktemp("board")
    runs = folder / "runs.sqlite"
    with FakeOpenAIServer() as srv:
        asyncio.run(record_runs(srv, runs))
        asyncio.run(run_fit(folder / "fits" / "uppercase"))
        asyncio.run(chat(srv, folder / "app.db"))
        write_checkpoints(folder / "checkpoints")
        srv.chat.script(
            Reply(tool_calls=[ToolCall("lookup", {"order": 42}, id="c1")]),
            Reply(tool_calls=[ToolCall("refund", {"order": 42}, id="c2")]),
            "Refunded 30 EUR for order 42.",
        )
        dbos_db, effects = folder / "dbos.sqlite", folder / "effects"
        worker = subprocess.Popen(
            [sys.executable, str(WORKER), str(dbos_db), srv.base_url, str(effects), str(runs)],
            stdout=subprocess.PIPE,
            stderr=(folder / "worker.log").open("w"),
            text=True,
            cwd=SUPPORT,
            env={**os.environ, "PYTHONPATH": str(SUPPORT)},
        )
        lines = Lines(worker)
        try:
            assert lines.next() == "needs_approval", (folder / "worker.log").read_text()
            options = ["--fits", str(folder / "fits"), "--sessions", str(folder / "app.db")]
            options += ["--dbos", str(dbos_db), "--checkpoints", str(folder / "checkpoints")]
            with board_process(folder / "board.log", str(runs), *options) as board:
                shots = folder / "shots"
                shots.mkdir()
                yield World(board, worker, lines, effects, shots)
        finally:
            if worker.poll() is None:
                worker.kill()
            worker.wait()


@pytest.fixture
def browser() -> Iterator[tuple[Any, Console]]:
    with chromium_page() as (page, console):
        yield page, console
        assert console.errors == []


def test_the_runs_list_opens_to_a_run_with_its_tool_calls_and_answer(
    world: World, browser: tuple[Any, Console]
) -> None:
    page, _ = browser
    page.goto(world.board.url + "/runs")
    rows = page.locator("#runs tbody tr")
    assert rows.count() == 3  # the agent's run, the broken one, the durable run paused
    assert page.get_by_text("Where is order 42?").is_visible()
    assert page.locator(".badge.error").count() == 1
    assert page.locator(".badge.needs_approval").count() == 1
    screenshot(page, "runs", world.shots)

    page.get_by_text("Where is order 42?").click()
    page.wait_for_url("**/runs/*")
    answer = page.locator("pre.answer")
    assert answer.inner_text() == "Order 42 costs 30 EUR and has shipped."
    tools = page.locator(".tools tbody tr")
    assert tools.count() == 1
    assert "lookup" in tools.inner_text() and '"order": 42' in tools.inner_text()
    assert "30 EUR, shipped" in tools.inner_text()
    assert page.locator(".waterfall .span").count() >= 4  # agent, prompts, model calls, tool
    assert "sk-board-test-key" not in page.content()
    screenshot(page, "run", world.shots)


def test_a_broken_run_shows_its_error_and_search_finds_it(
    world: World, browser: tuple[Any, Console]
) -> None:
    page, _ = browser
    page.goto(world.board.url + "/runs?status=error")
    assert page.locator("#runs tbody tr").count() == 1
    page.goto(world.board.url + "/runs?q=mug")
    page.locator("#runs tbody a").first.click()
    page.wait_for_url("**/runs/*")
    assert "the stock service is down for blue mug" in page.locator("pre.err").first.inner_text()


def test_training_shows_the_fit_as_a_chart_with_each_candidates_diff(
    world: World, browser: tuple[Any, Console]
) -> None:
    page, _ = browser
    page.goto(world.board.url + "/training")
    page.get_by_role("link", name="uppercase").click()
    page.wait_for_url("**/training/fit*")
    chart = page.locator("svg.chart")
    assert chart.is_visible()
    points = chart.locator("circle")
    assert points.count() >= 2  # the baseline and the candidates scored on the valset
    assert chart.locator("circle.kept").count() >= 2
    drawn = [points.nth(i).bounding_box() for i in range(points.count())]
    assert all(box is not None and box["width"] > 0 for box in drawn)  # drawn, not just there
    diffs = page.locator("pre.diff").all_inner_texts()
    assert any("+Repeat the word in uppercase: {text}" in d for d in diffs)
    assert page.locator("tbody .badge.dropped").count() >= 1
    best = page.locator(".changes").inner_text()
    assert "changed instr.prompt" in best and "+Repeat the word in uppercase" in best
    screenshot(page, "training", world.shots)


def test_a_conversation_reads_turn_by_turn_and_deletes(
    world: World, browser: tuple[Any, Console]
) -> None:
    page, _ = browser
    page.goto(world.board.url + "/conversations")
    page.get_by_role("link", name="alice").click()
    page.wait_for_url("**/conversations/alice")
    turns = page.locator("section.turn")
    assert turns.count() == 2
    assert "Hi, I'm Alice" in turns.nth(0).inner_text()
    assert "Hello Alice, how can I help?" in turns.nth(0).inner_text()
    assert "Your order ships on Monday." in turns.nth(1).inner_text()
    screenshot(page, "conversation", world.shots)
    page.get_by_role("button", name="Delete").click()
    page.wait_for_url("**/conversations")
    assert page.get_by_text("No conversation in this store.").is_visible()


def test_approve_finishes_the_paused_run_with_its_tool_run_once(
    world: World, browser: tuple[Any, Console]
) -> None:
    page, _ = browser
    page.goto(world.board.url + "/approvals")
    row = page.locator("#live tbody tr")
    assert row.count() == 1
    text = row.inner_text()
    assert "t-42" in text and "refund" in text and '"order": 42' in text
    assert "requires approval" in text
    assert not world.effects.exists()  # nothing refunded before the decision
    screenshot(page, "approvals", world.shots)

    page.get_by_role("button", name="Approve").click()
    page.wait_for_url("**/approvals?note=*")
    assert world.worker_lines.next() == "done Refunded 30 EUR for order 42."
    assert world.worker.wait(LINE_BOUND) == 0
    assert world.effects.read_text().splitlines() == ["refund 42"]
    page.goto(world.board.url + "/approvals")
    assert page.get_by_text("No durable run waits for a decision.").is_visible()
    # the run went on after the decision (a resumed agent run): its record holds the answer
    deadline = time.monotonic() + LINE_BOUND
    while True:
        page.goto(world.board.url + "/runs?status=ok&q=Refunded")
        if page.locator("#runs tbody tr").count() == 1:
            break
        assert time.monotonic() < deadline, page.content()
        time.sleep(0.2)
    assert page.locator("#runs tbody .badge.resumed").count() == 1  # shown as a continuation
    page.locator("#runs tbody td:first-child a").click()
    page.wait_for_url("**/runs/*")
    assert page.locator("pre.answer").inner_text() == "Refunded 30 EUR for order 42."
    assert "refunded 42" in page.locator(".tools").inner_text()
    assert page.locator("pre.text").first.inner_text() == "Refund order 42"
    resumed = page.url
    page.locator("dd.continues a").click()  # to the run that paused, and back
    page.wait_for_url("**/runs/*")
    assert page.locator(".facts .badge.needs_approval").count() == 1
    page.locator("dd.continued a").click()
    page.wait_for_url(resumed)


def test_two_checkpoints_side_by_side_with_their_diff(
    world: World, browser: tuple[Any, Console]
) -> None:
    page, _ = browser
    page.goto(world.board.url + "/checkpoints?a=v1.toml&b=v2.toml")
    assert page.locator(".side pre").count() == 2
    diff = page.locator("pre.diff").inner_text()
    assert "-Answer briefly." in diff and "+Cite the order number." in diff
    screenshot(page, "checkpoints", world.shots)
