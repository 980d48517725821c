"""The Training page of a fit with several objectives shows its frontier: one row per
non-dominated candidate, a column per objective with its direction, what the candidate changed,
and the candidate the fit kept marked."""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path
from typing import Any

from optim_task import GOOD, Task, dataset, metric, student_reply
from starlette.testclient import TestClient

from promptimus.board.app import BoardConfig, build_app
from promptimus.llms.scripted import ScriptedLLM
from promptimus.optim import BestUnder, Cost, ProposalRequest, Reflective, fit

CHEAP = "In capitals: {text}"


def client(config: BoardConfig) -> TestClient:
    return TestClient(build_app(config), base_url="http://127.0.0.1:8321", follow_redirects=False)


def two_objective_fit(folder: Path, **options: Any) -> Any:
    queue = [CHEAP, GOOD]

    async def propose(request: ProposalRequest) -> str:
        return queue.pop(0) if queue else GOOD

    return asyncio.run(
        fit(
            Task(ScriptedLLM(student_reply, model_name="student")),
            dataset()[:4],
            objectives={"score": metric, "cost": Cost({"student": (1000.0, 1000.0)})},
            optimizer=Reflective(propose=propose, minibatch_size=4),
            budget=28,
            checkpoint_dir=folder,
            progress=False,
            **options,
        )
    )


def frontier_rows(page: str) -> list[list[str]]:
    section = page.split("<h2>Objective frontier</h2>", 1)[1].split("<h2>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", section, re.S)
    return [
        [
            html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()
            for cell in re.findall(r"<t[dh]>(.*?)</t[dh]>", row, re.S)
        ]
        for row in rows
    ]


def test_the_fit_page_shows_the_frontier_with_the_kept_candidate_marked(tmp_path: Path) -> None:
    result = two_objective_fit(tmp_path / "fits" / "cheap", select=BestUnder("score", cost=0.006))
    assert [p.candidate for p in result.frontier] == [1, 2]

    with client(BoardConfig(tmp_path / "runs.sqlite", fits=tmp_path / "fits")) as board:
        page = board.get("/training/fit?dir=cheap")
    assert page.status_code == 200
    rows = frontier_rows(page.text)
    assert rows[0] == ["candidate", "score (higher better)", "cost (lower better)", "changes", ""]
    assert rows[1:] == [
        ["1", "0.5", "0.004", f"instr.prompt = {CHEAP!r}", "kept"],
        ["2", "1", "0.007", f"instr.prompt = {GOOD!r}", ""],
    ]
    assert page.text.count('class="badge kept chosen"') == 1


def test_a_single_metric_fit_has_no_frontier_section(tmp_path: Path) -> None:
    asyncio.run(
        fit(
            Task(ScriptedLLM(student_reply, model_name="student")),
            dataset()[:4],
            metric,
            optimizer=Reflective(propose=lambda request: GOOD, minibatch_size=4),
            budget=16,
            checkpoint_dir=tmp_path / "fits" / "one",
            progress=False,
        )
    )
    with client(BoardConfig(tmp_path / "runs.sqlite", fits=tmp_path / "fits")) as board:
        page = board.get("/training/fit?dir=one")
    assert page.status_code == 200 and "Objective frontier" not in page.text


def test_objectives_read_from_a_damaged_or_hostile_history_are_escaped_or_left_out(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "fits" / "bad"
    folder.mkdir(parents=True)
    meta = '<meta http-equiv="refresh" content="0;url=https://example.invalid">'
    better = {"score": "higher", meta: "lower"}
    lines = [
        {
            "candidate": 0,
            "parent": None,
            "values": {"p": meta},
            "val_score": 0.5,
            "objectives": {"score": 0.5, meta: 2.0},
            "better": better,
            "accepted": True,
        },
        {
            "candidate": 1,
            "parent": 0,
            "path": "p",
            "value": meta,
            "val_score": 0.75,
            "objectives": {"score": 0.75, meta: 3.0},
            "accepted": True,
        },
        {
            "candidate": 2,
            "parent": 0,
            "path": "p",
            "value": "x",
            "val_score": 0.9,
            "objectives": {"score": "high", meta: None},
            "accepted": False,
        },
        {
            "candidate": 3,
            "parent": 0,
            "path": "p",
            "value": "y",
            "val_score": 0.9,
            "objectives": [1, 2],
            "accepted": False,
        },
        {
            "candidate": 4,
            "parent": 0,
            "path": "p",
            "value": "z",
            "val_score": 0.9,
            "objectives": {"score": float("nan"), meta: 1.0},
            "accepted": False,
        },
    ]
    (folder / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    with client(BoardConfig(tmp_path / "runs.sqlite", fits=tmp_path / "fits")) as board:
        page = board.get("/training/fit?dir=bad")
    assert page.status_code == 200
    assert "<meta http-equiv" not in page.text and "&lt;meta http-equiv" in page.text
    rows = frontier_rows(page.text)
    assert [row[0] for row in rows[1:]] == ["0", "1"]  # the unreadable candidates left out
    assert rows[2][-1] == "kept"
