"""evaluate() in process vs on Ray workers (`RayRunner`), on this machine.

    uv run python bench/distributed.py [--rows 200] [--burn-ms 20] [--trivial-rows 2000]
                                       [--repeats 3]

Two evaluations, each timed (median of `--repeats` interleaved rounds) in process and with
`RayRunner` and 1 and 2 workers, with the ratio of each to the in-process wall time of the same
run:

- CPU-bound: the module echoes its input and the metric burns `--burn-ms` of CPU per row (a
  hash loop calibrated at start), as a metric that runs generated code or parses documents
  would. One process runs one metric at a time, whatever the concurrency; workers run them side
  by side.
- trivial: the same with a metric that compares two strings, so the time is the runner's own:
  the per-example overhead is (wall time - in-process wall time) / rows.

Ray starts once and each runner runs a warm-up evaluation before the rounds, so `ray.init` and
worker start-up (printed apart) are not in the ratios. On a shared machine the in-process line
says how much other work stretched a run: every figure is stretched alike, the ratios less so.
The module and the metric are defined in this script (`__main__`): they travel to the workers
by value.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from promptimus import Module
from promptimus.evals import Example, Score, evaluate

# Under `uv run`, Ray would start every worker through `uv run` again; the workers of this
# benchmark run the same interpreter directly (read when ray is imported).
os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")

BLOCK = b"x" * 4096
_rounds = 1000


class Echo(Module):
    async def forward(self, text: str) -> str:
        return text


def burn(rounds: int) -> str:
    digest = b""
    for _ in range(rounds):
        digest = hashlib.sha256(BLOCK + digest).digest()
    return digest.hex()


def calibrate(milliseconds: float) -> int:
    """Hash rounds that take `milliseconds` of CPU here (the best of a few tries)."""
    rounds = 2000
    best = min(_cpu_seconds(lambda: burn(rounds)) for _ in range(5))
    return max(1, round(rounds * milliseconds / 1000 / best))


def _cpu_seconds(fn: Callable[[], Any]) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def make_burning_metric(rounds: int) -> Callable[[Example, Any], Score]:
    def burning(example: Example, output: Any) -> Score:
        burn(rounds)
        return Score(1.0 if output == example.expected else 0.0)

    return burning


def trivial(example: Example, output: Any) -> float:
    return 1.0 if output == example.expected else 0.0


def rows(n: int) -> list[Example]:
    return [Example({"text": f"row {i}"}, expected=f"row {i}") for i in range(n)]


async def once(run: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    report = await run()
    elapsed = time.perf_counter() - started
    assert report.score == 1.0 and not report.errors, report
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--burn-ms", type=float, default=20.0)
    parser.add_argument("--trivial-rows", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import ray

    from promptimus.distributed import RayRunner

    rounds = calibrate(args.burn_ms)
    burning = make_burning_metric(rounds)
    cpu_data, light_data = rows(args.rows), rows(args.trivial_rows)
    module = Echo()
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    print(f"metric: {rounds} hash rounds = {args.burn_ms:g} ms CPU per row (calibrated)")

    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as temp:
        started = time.perf_counter()
        # three logical CPUs for the two runners' three workers; only one runner works at a time
        ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, _temp_dir=temp)
        print(f"ray.init: {time.perf_counter() - started:.1f} s")
        try:
            runs: dict[str, Any] = {"in process": None}
            for workers in (1, 2):
                runner = RayRunner(num_workers=workers)
                started = time.perf_counter()
                await evaluate(module, rows(workers), trivial, runner=runner, progress=False)
                name = f"Ray, {workers} worker{'s' if workers > 1 else ''}"
                print(f"{name}: start and warm-up {time.perf_counter() - started:.1f} s")
                runs[name] = runner
            # interleaved rounds: every runner sees the same machine load over the run
            times: dict[str, dict[str, list[float]]] = {"cpu": {}, "trivial": {}}
            for _ in range(args.repeats):
                for name, runner in runs.items():
                    for kind, data, metric in (
                        ("cpu", cpu_data, burning),
                        ("trivial", light_data, trivial),
                    ):
                        seconds = await once(
                            lambda d=data, m=metric, r=runner: evaluate(
                                module, d, m, runner=r, progress=False
                            )
                        )
                        times[kind].setdefault(name, []).append(seconds)
            for runner in runs.values():
                if runner is not None:
                    runner.close()
        finally:
            ray.shutdown()

    results = {
        kind: {name: statistics.median(values) for name, values in per.items()}
        for kind, per in times.items()
    }
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    print()
    base = results["cpu"]["in process"]
    work = args.rows * args.burn_ms / 1000
    print(f"CPU-bound metric, {args.rows} rows ({args.burn_ms:g} ms CPU each, {work:.1f} s of CPU")
    print(f"work; in process it took {base / work:.2f}x that: the rest is the machine's load):")
    for name, seconds in results["cpu"].items():
        print(f"  {name:<16} {seconds:7.2f} s   ratio {seconds / base:5.2f}   "
              f"speed-up {base / seconds:4.2f}x")  # fmt: skip
    base = results["trivial"]["in process"]
    print(f"trivial metric, {args.trivial_rows} rows:")
    for name, seconds in results["trivial"].items():
        extra = (seconds - base) / args.trivial_rows * 1e6
        print(f"  {name:<16} {seconds:7.2f} s   ratio {seconds / base:5.2f}   "
              f"per example {seconds / args.trivial_rows * 1e6:6.0f} us "
              f"(runner overhead {extra:+6.0f} us)")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
