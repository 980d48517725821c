"""`Reflective(merge=True)`: two front candidates that each fixed a different module are merged
(each changed parameter from the candidate that changed it), scored on validation, kept when
better and reverted when worse; the history names the parents and what came from which, and a
resumed run rebuilds the merge. The task is `merge_task` (tests/support)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from merge_task import A0, A1, B1, B_STRICT, BUDGET, train

from promptimus.errors import InvalidArgument
from promptimus.optim import Reflective


async def test_a_merge_that_combines_two_modules_fixes_is_kept(tmp_path: Path) -> None:
    program, result = await train(B1, BUDGET, tmp_path)
    _, fixed_a, fixed_b, merged = result.history
    # the two fixes were found from the baseline, each on its own module
    assert (fixed_a["parent"], fixed_a["path"], fixed_a["val_score"]) == (0, "a.prompt", 2 / 6)
    assert (fixed_b["parent"], fixed_b["path"], fixed_b["val_score"]) == (0, "b.prompt", 4 / 6)
    assert merged["merge"] == {
        "parents": [2, 1],
        "ancestor": 0,
        "took": {"a.prompt": 1, "b.prompt": 2},
    }
    assert merged["candidate"] == 3 and merged["parent"] == 2
    assert merged["changes"] == {"a.prompt": A1}
    assert merged["accepted"] and merged["reason"] == "beats best"
    assert merged["val_score"] == 5 / 6 and result.best_score == 5 / 6
    assert (program.a.prompt.value, program.b.prompt.value) == (A1, B1)
    assert result.best_values == {"a.prompt": A1, "b.prompt": B1}
    assert result.calls == BUDGET
    saved = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert saved[-1]["merge"] == merged["merge"]


async def test_a_merge_that_does_worse_is_reverted() -> None:
    program, result = await train(B_STRICT, BUDGET)
    merged = result.history[-1]
    assert merged["merge"]["took"] == {"a.prompt": 1, "b.prompt": 2}
    assert merged["val_score"] == 3 / 6 and not merged["accepted"]
    assert merged["reason"] == "merge not better on validation: 0.5 <= best 0.666667"
    # the module holds the best candidate (the `b` fix alone), not the merge
    assert result.best_score == 4 / 6
    assert (program.a.prompt.value, program.b.prompt.value) == (A0, B_STRICT)


async def test_a_resumed_run_rebuilds_the_merge_and_does_not_try_it_again(tmp_path: Path) -> None:
    await train(B1, BUDGET, tmp_path)
    # nothing left to spend: the module ends holding the merge, rebuilt from the history
    program, result = await train(B1, BUDGET, tmp_path, resume=True)
    assert result.calls == BUDGET and "merge" in result.history[-1]
    assert (program.a.prompt.value, program.b.prompt.value) == (A1, B1)
    _, longer = await train(B1, BUDGET + 6 + 18, tmp_path, resume=True)
    later = longer.history[4:]
    assert later and all(entry.get("merge", {}).get("parents") != [2, 1] for entry in later)


def test_merge_takes_a_bool_only() -> None:
    for wrong in ("yes", 1, None):
        with pytest.raises(InvalidArgument, match=r"merge=\) takes True or False"):
            Reflective(propose=lambda request: "x", merge=wrong)  # type: ignore[arg-type]
