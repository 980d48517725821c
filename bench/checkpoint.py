"""Checkpoint save speed: a new file, and saving over an existing (hand-edited) one in place.

    uv run python bench/checkpoint.py [--sizes 1000 10000] [--repeats 5]

Trees of N string parameters (two-line prompts, 100 per submodule). Printed per size, as the
median of `--repeats` runs, each with its ratio to the baseline measured in the same run:

- baseline: the save path before in-place updates existed — the writer's text plus the atomic
  write (`atomic_write_text(path, render_module_dict(data)[0])`), to a new file;
- save, new file: `Module.save()` to a path that does not exist (target: ratio <= 1.05),
  interleaved with the baseline;
- save over an unedited file (all values changed): the file is exactly what the writer made (no
  hand edits), so the fast writer rewrites it after one stdlib parse and a render to check that;
- in place, unchanged / 1% changed / all changed: `Module.save()` over the file the tree saved
  before, with a comment line above every table. Unchanged values are noticed after one stdlib
  parse and the file is kept as it is; otherwise tomlkit parses and re-renders the whole file,
  which costs more: it is the price of keeping the user's comments;
- tomlkit.parse of the hand-edited file alone: the floor of the in-place path;
- load: `Module.load()` of the same file, for scale.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomlkit

from promptimus import Module, Parameter
from promptimus.checkpoint.files import atomic_write_text
from promptimus.checkpoint.write import render_module_dict

PER_MODULE = 100


class Box(Module):
    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        return None


def tree(size: int, version: int = 0) -> Box:
    root = Box()
    for m in range(max(1, size // PER_MODULE)):
        sub = Box()
        for i in range(min(size, PER_MODULE)):
            setattr(sub, f"p{i}", Parameter(f"Prompt {m}-{i} v{version}.\nSecond line."))
        setattr(root, f"m{m}", sub)
    return root


def change(root: Box, every: int) -> None:
    for index, (_, param) in enumerate(root.named_parameters()):
        if index % every == 0:
            param.value = param.value + " (edited)"


def hand_edit(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    text = text.replace("\n[m", "\n# reviewed by the docs team\n[m")
    path.write_text(text, encoding="utf-8")


def median_time(run: Callable[[], object], before: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        before()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(size: int, repeats: int, folder: Path) -> None:
    root = tree(size)
    data = root.serialize()
    new_path = folder / f"new-{size}.toml"
    base_path = folder / f"base-{size}.toml"
    target = folder / f"edited-{size}.toml"

    def fresh_target() -> None:
        target.unlink(missing_ok=True)
        tree(size).save(target)
        hand_edit(target)

    results: dict[str, float] = {}
    # interleaved, so machine noise and warm-up hit both alike
    baseline_times, new_times = [], []
    for _ in range(repeats):
        baseline_times.append(
            median_time(
                lambda: atomic_write_text(base_path, render_module_dict(data)[0]),
                lambda: base_path.unlink(missing_ok=True),
                1,
            )
        )
        new_times.append(
            median_time(lambda: root.save(new_path), lambda: new_path.unlink(missing_ok=True), 1)
        )
    results["baseline (writer + atomic write)"] = statistics.median(baseline_times)
    results["save, new file"] = statistics.median(new_times)
    changed = tree(size, version=1)

    def unedited_file() -> None:
        new_path.unlink(missing_ok=True)
        root.save(new_path)

    results["save over an unedited file"] = median_time(
        lambda: changed.save(new_path), unedited_file, repeats
    )
    unchanged = tree(size)
    results["in place, unchanged"] = median_time(
        lambda: unchanged.save(target), fresh_target, repeats
    )
    some = tree(size)
    change(some, 100)
    results["in place, 1% changed"] = median_time(lambda: some.save(target), fresh_target, repeats)
    every = tree(size, version=1)
    results["in place, all changed"] = median_time(
        lambda: every.save(target), fresh_target, repeats
    )
    fresh_target()
    text = target.read_text(encoding="utf-8")
    results["(tomlkit.parse of the file alone)"] = median_time(
        lambda: tomlkit.parse(text), lambda: None, repeats
    )
    loader = tree(size)
    results["load"] = median_time(lambda: loader.load(target), lambda: None, repeats)
    assert "# reviewed by the docs team" in target.read_text(encoding="utf-8")

    baseline = results["baseline (writer + atomic write)"]
    print(f"\n{size} parameters ({new_path.stat().st_size / 1e6:.2f} MB)")
    for name, seconds in results.items():
        print(f"  {name:34} {seconds * 1000:9.1f} ms   {seconds / baseline:6.2f}x baseline")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        for size in args.sizes:
            bench(size, args.repeats, Path(name))


if __name__ == "__main__":
    main()
