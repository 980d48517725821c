"""One process of tests/durable/test_durable_workers.py: a DBOS executor of the "jobs" durable
agent on a PostgreSQL system database, the model being the fake OpenAI server at `--base-url`.

    python durable_worker.py work    URL --executor w1 --folder DIR --base-url URL
    python durable_worker.py enqueue URL --executor web --folder DIR --base-url URL --runs 60
    python durable_worker.py collect URL --executor web --folder DIR --base-url URL --runs 60

`work` launches DBOS (which recovers the runs this executor id left unfinished), consumes the
queue and prints `ready`; it runs until SIGTERM. `enqueue` puts runs `run-0` .. `run-N-1` on the
queue and `collect` prints each run's final answer as JSON: both listen to no queue, so they
never run a job themselves.

`--concurrency N` sets the queue's global concurrency (default 2; 0: no global limit); each
worker runs one job at a time (`worker_concurrency=1`).

Each job is two tool calls and a final answer. Every tool call appends one line `<run> <tool>
<executor>` to `DIR/effects`: that file is the record of side effects the test counts. The
second tool of the run named in `DIR/blocking-run` first appends this process's pid to
`DIR/blocked`, then waits until someone writes to the FIFO `DIR/gate`: the test kills the
worker it finds there, mid-run, at a point it chose.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

from promptimus.agents import OpenaiToolCallingAgent
from promptimus.llms import OpenAILike
from promptimus.tools import Tool

APP = "durable-workers"
QUEUE_LIMIT = 2  # runs at once across every worker: the queue's global concurrency


def append_line(path: Path, line: str) -> None:
    """One write with O_APPEND: lines from many processes never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def build_agent(folder: Path, base_url: str, executor: str) -> OpenaiToolCallingAgent:
    effects = folder / "effects"
    blocking = (folder / "blocking-run").read_text().strip()

    @Tool.decorate
    def reserve(run: str) -> str:
        """Reserve the resources of a job."""
        append_line(effects, f"{run} reserve {executor}")
        return f"{run} reserved"

    @Tool.decorate
    def deliver(run: str) -> str:
        """Deliver a job."""
        if run == blocking:
            append_line(folder / "blocked", str(os.getpid()))
            with (folder / "gate").open() as gate:  # blocks until the test opens the FIFO
                gate.read()
        append_line(effects, f"{run} deliver {executor}")
        return f"{run} delivered"

    llm = OpenAILike("fake-model", api_key="sk-fake", base_url=base_url, timeout=120)
    return OpenaiToolCallingAgent("You run jobs.", [reserve, deliver], max_steps=5).with_llm(llm)


def launch(args: argparse.Namespace, *, listen: bool) -> Any:
    from dbos import DBOS

    from promptimus.durable import DurableAgent

    config = {"name": APP, "system_database_url": args.url, "executor_id": args.executor}
    DBOS(config={**config, "application_version": "jobs-1", "log_level": "WARNING"})
    agent = build_agent(args.folder, args.base_url, args.executor)
    limit = args.concurrency or None
    durable = DurableAgent(agent, name="jobs", concurrency=limit, worker_concurrency=1)
    if not listen:
        DBOS.listen_queues([])
    DBOS.launch()
    return durable


async def work(args: argparse.Namespace) -> None:
    from dbos import DBOS

    launch(args, listen=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)
    await stop.wait()
    DBOS.destroy(workflow_completion_timeout_sec=0)


async def enqueue(args: argparse.Namespace) -> None:
    from dbos import DBOS

    durable = launch(args, listen=False)
    for n in range(args.runs):
        await durable.enqueue(f"run-{n}", workflow_id=f"run-{n}")
    print("enqueued", flush=True)
    DBOS.destroy()


async def collect(args: argparse.Namespace) -> None:
    from dbos import DBOS

    durable = launch(args, listen=False)
    answers = {}
    for n in range(args.runs):
        result = await durable.result(f"run-{n}")
        answers[f"run-{n}"] = [result.status, result.output.content]
    print(json.dumps(answers), flush=True)
    DBOS.destroy()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["work", "enqueue", "collect"])
    parser.add_argument("url", help="the PostgreSQL system database")
    parser.add_argument("--executor", required=True, help="this process's DBOS executor id")
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--runs", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=QUEUE_LIMIT, help="0: no limit")
    args = parser.parse_args()
    asyncio.run({"work": work, "enqueue": enqueue, "collect": collect}[args.mode](args))


if __name__ == "__main__":
    main()
