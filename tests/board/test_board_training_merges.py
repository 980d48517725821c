"""The Training page of a fit that merged: each merge names its parents, their ancestor and
which parameter came from which; each proposal links to the failing examples it came from,
whose page shows their runs' calls as the proposer saw them, escaped and with secrets left
out (Starlette's test client on the real app)."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from merge_task import B1, BUDGET, train
from starlette.testclient import TestClient

from promptimus.board.app import BoardConfig, build_app


def client(fits: Path) -> TestClient:
    config = BoardConfig(fits.parent / "runs.sqlite", fits=fits)
    return TestClient(build_app(config), base_url="http://127.0.0.1:8321")


def text_of(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", html))


async def test_a_merge_shows_its_parents_and_what_came_from_each(tmp_path: Path) -> None:
    await train(B1, BUDGET, tmp_path / "fits" / "run")
    with client(tmp_path / "fits") as board:
        fit = board.get("/training/fit?dir=run")
    assert fit.status_code == 200
    shown = " ".join(text_of(fit.text).split())
    assert "merge of 2 and 1 (common ancestor 0): a.prompt from 1, b.prompt from 2" in shown
    assert "+A fixA: {text}" in shown  # what it took from its second parent, as a diff


async def test_a_proposal_links_to_the_failing_examples_and_their_traces(tmp_path: Path) -> None:
    await train(B1, BUDGET, tmp_path / "fits" / "run")
    with client(tmp_path / "fits") as board:
        fit = board.get("/training/fit?dir=run")
        links = re.findall(r'href="(/training/step\?[^"]+)"', fit.text)
        assert len(links) == 2  # the two proposals; the baseline and the merge came from none
        step = board.get(unescape(links[0]))
    assert step.status_code == 200
    shown = text_of(step.text)
    # step 1 changed `a`: its failing examples, each with `a`'s calls in its run
    assert "a.prompt" in shown and "5 failing examples" in shown
    assert "root.a (Prompt)(text='x1') -> 'bad'" in shown
    assert "got 'bad|ok'; both stages must answer ok" in shown
    assert "root.b" not in shown


def test_a_step_page_escapes_its_values_and_leaves_secrets_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_SERVICE_TOKEN", "tok-9f8e7d6c5b4a")
    run = tmp_path / "fits" / "run"
    run.mkdir(parents=True)
    entries = [
        {
            "step": 0,
            "candidate": 0,
            "parent": None,
            "values": {"p": "x"},
            "val_score": 0.0,
            "accepted": True,
            "reason": "baseline",
        },
        {
            "step": 1,
            "candidate": None,
            "parent": 0,
            "path": "p",
            "value": "y",
            "accepted": False,
            "reason": "not better on minibatch: 0 <= 0 of 1 with the current value",
            "examples": [
                {
                    "inputs": {"q": "<script>alert(1)</script>"},
                    "score": 0.0,
                    "output": "called with tok-9f8e7d6c5b4a",
                    "trace": "root (Agent)(q='<img src=x onerror=alert(1)>') -> 'no'",
                }
            ],
        },
    ]
    (run / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    with client(tmp_path / "fits") as board:
        step = board.get("/training/step?dir=run&step=1")
        missing = board.get("/training/step?dir=run&step=7")
        outside = board.get("/training/step?dir=..&step=1")
    assert step.status_code == 200
    assert "<script>alert" not in step.text and "<img src=x" not in step.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in step.text
    assert "tok-9f8e7d6c5b4a" not in step.text and "called with" in step.text
    assert missing.status_code == 404 and outside.status_code == 404


def test_a_fit_page_shows_misshapen_merge_entries_without_failing(tmp_path: Path) -> None:
    run = tmp_path / "fits" / "run"
    run.mkdir(parents=True)
    entries = [
        {
            "step": 0,
            "candidate": 0,
            "parent": None,
            "values": {"p": "x"},
            "val_score": 0.0,
            "accepted": True,
            "reason": "baseline",
        },
        {
            "step": 1,
            "candidate": 1,
            "parent": 0,
            "merge": {"parents": "1,2", "took": [1]},
            "changes": 5,
            "examples": "none",
            "val_score": 0.0,
            "accepted": False,
        },
        {
            "step": "2",
            "candidate": 2,
            "parent": 0,
            "merge": None,
            "changes": {"p": ["a"]},
            "examples": [1, "x"],
            "val_score": 0.5,
            "accepted": True,
        },
    ]
    (run / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in entries))
    with client(tmp_path / "fits") as board:
        fit = board.get("/training/fit?dir=run")
        step = board.get("/training/step?dir=run&step=2")
    assert fit.status_code == 200 and "<p class=merge>merge of" in fit.text
    assert "p: [&quot;a&quot;]" in fit.text
    assert step.status_code == 200 and "0 failing examples" in step.text
