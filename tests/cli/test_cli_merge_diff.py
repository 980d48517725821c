"""`promptimus diff` on merges: three checkpoints (PARENT_A MERGED PARENT_B) say what the merged
one took from each parent, and `--merges RUN_DIR` lists a training run's merges, driven in a
subprocess as a user would run them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from merge_task import A0, A1, B0, B1, BUDGET, Duo, train

TIMEOUT = 120  # seconds; generous, so a regression fails instead of hanging


def promptimus(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "promptimus", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=environ,
    )


def save(folder: Path, name: str, a: str, b: str) -> None:
    program = Duo()
    program.a.prompt.value, program.b.prompt.value = a, b
    program.save(folder / name)


def test_three_checkpoints_show_what_the_merge_took_from_each_parent(tmp_path: Path) -> None:
    save(tmp_path, "fixed_a.toml", A1, B0)
    save(tmp_path, "fixed_b.toml", A0, B1)
    save(tmp_path, "merged.toml", A1, B1)
    result = promptimus("diff", "fixed_a.toml", "merged.toml", "fixed_b.toml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "merged.toml against its parents fixed_a.toml and fixed_b.toml:"
    assert "< from fixed_a.toml: a.prompt" in lines
    assert "      -A: {text}" in lines and "      +A fixA: {text}" in lines
    assert "< from fixed_b.toml: b.prompt" in lines
    assert "      +B fixB: {before} / {text}" in lines
    assert "a.role" not in result.stdout  # what both parents hold alike is not listed


def test_a_parameter_from_neither_parent_is_named_and_exits_1(tmp_path: Path) -> None:
    save(tmp_path, "fixed_a.toml", A1, B0)
    save(tmp_path, "fixed_b.toml", A0, B1)
    save(tmp_path, "edited.toml", A1, "B edited: {before} / {text}")
    result = promptimus("diff", "fixed_a.toml", "edited.toml", "fixed_b.toml", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert '! from neither parent: b.prompt = "B edited: {before} / {text}"' in result.stdout


async def test_merges_of_a_training_run_name_their_parents_and_what_came_from_each(
    tmp_path: Path,
) -> None:
    await train(B1, BUDGET, tmp_path / "run")
    result = promptimus("diff", "--merges", "run", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "candidate 3 merges 2 and 1 (common ancestor 0): kept, validation 0.833"
    assert "  a.prompt from candidate 1" in lines and "  b.prompt from candidate 2" in lines
    assert "      --- candidate 2:a.prompt" in lines and "      +A fixA: {text}" in lines
    assert "      --- candidate 1:b.prompt" in lines and "      +B fixB: {before} / {text}" in lines


def test_diff_merges_refuses_what_is_not_a_run_and_a_second_path(tmp_path: Path) -> None:
    refused = promptimus("diff", "--merges", ".", cwd=tmp_path)
    assert refused.returncode == 2 and "holds no history.jsonl" in refused.stderr
    two = promptimus("diff", "--merges", "a", "b", cwd=tmp_path)
    assert two.returncode == 2 and "takes one training run folder" in two.stderr
    alone = promptimus("diff", "a.toml", cwd=tmp_path)
    assert alone.returncode == 2 and "diff takes two checkpoints" in alone.stderr
    assert "Traceback" not in refused.stderr + two.stderr + alone.stderr
