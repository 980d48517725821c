"""A run page shows the compactions of its conversation: which steps ran, the size before and
after, and what the compaction itself cost; a run that did not compact shows none, and a
damaged record of one does not break the page."""

from __future__ import annotations

import asyncio
import re
import sqlite3
from pathlib import Path

from long_conversation import lookup, openai_responder, turn_text
from starlette.testclient import TestClient

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.board import record
from promptimus.board.app import BoardConfig, build_app
from promptimus.llms import OpenAILike
from promptimus.modules import Compactor
from promptimus.testing import FakeOpenAIServer

BASE = "http://127.0.0.1:8321"


async def long_talk(srv: FakeOpenAIServer, path: Path) -> list[int]:
    """Seven turns with a compactor; the number of compactions of each run."""
    srv.chat.respond_with(openai_responder)
    llm = OpenAILike("fake-model", api_key=srv.api_key, base_url=srv.base_url)
    agent = OpenaiToolCallingAgent(
        "You look things up.", [lookup], memory_size=1000, compactor=Compactor(trigger_tokens=900)
    ).with_llm(llm)
    counts = []
    with record(path):
        for n in range(1, 8):
            result = await agent.run(turn_text(n))
            counts.append(len(result.record.compactions))
    return counts


def pages(path: Path) -> list[str]:
    """The run pages, oldest run first."""
    with TestClient(build_app(BoardConfig(path)), base_url=BASE) as board:
        ids = re.findall(r'href="/runs/([0-9a-f]+)"', board.get("/runs").text)
        return [board.get(f"/runs/{run_id}").text for run_id in reversed(ids)]


def test_a_run_page_lists_the_compactions_of_its_run(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    path = tmp_path / "runs.sqlite"
    counts = asyncio.run(long_talk(fake_openai, path))
    shown = pages(path)

    assert len(shown) == len(counts) == 7
    assert counts[0] == 0 and sum(counts) > 0
    for page, compactions in zip(shown, counts, strict=True):
        rows = re.findall(r"<tr><td>clear_tool_results</td><td>(\d+)</td><td>(\d+)</td>", page)
        assert len(rows) == compactions
        assert ("<h2>Compactions</h2>" in page) == bool(compactions)
        for before, after in rows:
            assert int(after) < int(before)


def test_a_damaged_compaction_record_is_shown_as_it_is(
    tmp_path: Path, fake_openai: FakeOpenAIServer
) -> None:
    path = tmp_path / "runs.sqlite"
    asyncio.run(long_talk(fake_openai, path))
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE spans SET output = ? WHERE name = 'root.predictor.compactor'",
            ('{"tokens_before": "<b>x</b>", "tokens_after": null, "steps": 7, "usage": []}',),
        )
    shown = pages(path)
    assert any("&lt;b&gt;x&lt;/b&gt;" in page for page in shown)
    assert not any("<b>x</b>" in page or "Traceback" in page for page in shown)
