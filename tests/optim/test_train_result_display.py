"""`TrainResult` prints a short summary (baseline -> best score, candidates tried and kept,
calls, tokens, the best values) and renders as an escaped HTML table; `history` and
`best_values` hold everything."""

from __future__ import annotations

from pathlib import Path

from promptimus.dto import Usage
from promptimus.optim import TrainResult


def result(tmp_path: Path | None = None) -> TrainResult:
    history = [
        {"candidate": 0, "accepted": True, "reason": "baseline"},
        {"candidate": 1, "accepted": True, "reason": "beats best"},
        {"accepted": False, "reason": "unchanged"},
        {"event": "budget spent"},
    ]
    return TrainResult(
        baseline_score=0.25,
        best_score=0.75,
        history=history,
        checkpoint_path=tmp_path / "best.toml" if tmp_path else None,
        usage=Usage(prompt_tokens=300, completion_tokens=40, total_tokens=340),
        calls=12,
        best_values={"prompt.prompt": "Answer in <one> word."},
    )


def test_a_train_result_prints_a_summary(tmp_path: Path) -> None:
    summary = "TrainResult: score 0.250 -> 0.750; 2 candidates (1 kept), 12 calls, 340 tokens"
    assert repr(result()) == f"<{summary}>"
    assert str(result(tmp_path)).splitlines() == [
        summary,
        "  prompt.prompt = 'Answer in <one> word.'",
        f"  saved to {tmp_path / 'best.toml'}",
    ]
    assert len(result().history) == 4  # everything stays in the data


def test_many_values_are_cut_and_the_table_is_escaped() -> None:
    many = result()
    many.best_values = {f"p{i}": "x" for i in range(12)}
    assert str(many).splitlines()[-1] == "  … 4 more parameters in best_values"
    page = result()._repr_html_()
    assert "&lt;one&gt;" in page and "<one>" not in page and "<td>prompt.prompt</td>" in page
