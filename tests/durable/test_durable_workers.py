"""Durable runs on PostgreSQL with many workers: three worker processes
(tests/support/durable_worker.py, each a DBOS executor with its own id) consume 60 runs from one
DBOS queue with a global concurrency limit; one worker is SIGKILLed in the middle of a chosen
run, a replacement with the same executor id recovers its runs, and every run completes exactly
once.

Exactly once is counted outside the workers: the tools append their side effects to a file, and
the fake OpenAI server in this process counts every model request by (run, how far it got).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from locations import SUPPORT

from promptimus.testing import FakeOpenAIServer, Reply, ToolCall

WORKER = SUPPORT / "durable_worker.py"
RUNS = 60
BLOCKING_RUN = "run-17"
QUEUE_LIMIT = 2  # the queue's global concurrency in tests/support/durable_worker.py
HANG_GUARD = 600.0  # seconds: only so a broken run fails instead of hanging the suite
TOOLS = ("reserve", "deliver")


class Model:
    """The fake model, deterministic: each run calls `reserve`, then `deliver`, then answers.
    It counts the requests it answers by (run, tool results seen so far)."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, int]] = Counter()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        asked = max(i for i, m in enumerate(messages) if m["role"] == "user")
        run = messages[asked]["content"]
        done = sum(1 for m in messages[asked:] if m["role"] == "tool")
        with self._lock:
            self.seen[(run, done)] += 1
        if done < len(TOOLS):
            tool = TOOLS[done]
            return Reply(tool_calls=[ToolCall(tool, {"run": run}, id=f"{run}-{tool}")])
        return Reply(content=f"{run} finished")


def start(
    mode: str,
    url: str,
    executor: str,
    folder: Path,
    server: FakeOpenAIServer,
    *,
    runs: int = RUNS,
    concurrency: int = QUEUE_LIMIT,
) -> Any:
    """A process of tests/support/durable_worker.py; its stderr (DBOS's log, a traceback) goes to a
    file, which no pipe left unread can block."""
    command = [sys.executable, str(WORKER), mode, url, "--executor", executor]
    command += ["--folder", str(folder), "--base-url", server.base_url, "--runs", str(runs)]
    command += ["--concurrency", str(concurrency)]
    log = folder / f"{mode}-{executor}-{time.monotonic_ns()}.log"
    with log.open("wb") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    process.log = log  # type: ignore[attr-defined]
    return process


def failure(process: Any) -> str:
    return process.log.read_text(errors="replace")[-4000:]  # type: ignore[no-any-return]


def finish(process: Any) -> str:
    out, _ = process.communicate(timeout=HANG_GUARD)
    assert process.returncode == 0, failure(process)
    return out  # type: ignore[no-any-return]


def wait_for(condition: Any, what: str, processes: list[Any]) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while not condition():
        for process in processes:
            if process.poll() is not None:
                pytest.fail(f"a worker ended while waiting for {what}:\n{failure(process)}")
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@contextlib.contextmanager
def stopped_at_exit(processes: list[Any]) -> Iterator[None]:
    try:
        yield
    finally:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()


def test_three_workers_complete_sixty_queued_runs_exactly_once_when_one_is_killed(
    postgres_url: str, tmp_path: Path
) -> None:
    (tmp_path / "blocking-run").write_text(BLOCKING_RUN)
    os.mkfifo(tmp_path / "gate")
    effects, blocked = tmp_path / "effects", tmp_path / "blocked"
    model = Model()
    with FakeOpenAIServer(record=False) as server:
        server.chat.respond_with(model)
        finish(start("enqueue", postgres_url, "web", tmp_path, server))
        assert model.seen == Counter()  # enqueueing runs nothing

        names = ("w0", "w1", "w2")
        workers = {name: start("work", postgres_url, name, tmp_path, server) for name in names}
        everyone = list(workers.values())
        with stopped_at_exit(everyone):
            # the chosen run has reserved and its `deliver` is in flight in one worker: kill it
            wait_for(lambda: lines(blocked), f"{BLOCKING_RUN} to start delivering", everyone)
            (victim_pid,) = map(int, lines(blocked))
            (victim,) = [name for name, p in workers.items() if p.pid == victim_pid]
            os.kill(victim_pid, signal.SIGKILL)
            workers[victim].wait(timeout=HANG_GUARD)
            assert workers[victim].returncode == -signal.SIGKILL
            assert f"{BLOCKING_RUN} reserve {victim}" in lines(effects)
            assert not [line for line in lines(effects) if line.startswith(f"{BLOCKING_RUN} del")]
            everyone.remove(workers[victim])

            # a replacement with the dead worker's executor id hands its runs back to the queue
            replacement = start("work", postgres_url, victim, tmp_path, server)
            everyone.append(replacement)
            wait_for(lambda: len(lines(blocked)) == 2, f"{BLOCKING_RUN} to resume", everyone)
            with (tmp_path / "gate").open("w") as gate:  # let the resumed `deliver` finish
                gate.write("go")

            answers = json.loads(finish(start("collect", postgres_url, "web", tmp_path, server)))

        max_in_flight = server.max_in_flight

    assert answers == {f"run-{n}": ["completed", f"run-{n} finished"] for n in range(RUNS)}
    # every tool call ran once, the one in flight at the kill included (it had not written yet)
    ran = Counter(" ".join(line.split()[:2]) for line in lines(effects))
    assert ran == Counter({f"run-{n} {tool}": 1 for n in range(RUNS) for tool in TOOLS})
    # no finished model call was sent twice: three requests per run, none repeated
    assert model.seen == Counter({(f"run-{n}", done): 1 for n in range(RUNS) for done in range(3)})
    # the runs were spread over the workers, never more at once than the queue allows
    executors = {line.split()[2] for line in lines(effects)}
    assert len(executors) >= 2, executors
    assert max_in_flight <= QUEUE_LIMIT


FLEET_RUNS = 12
FLEET_BLOCKING_RUN = "run-7"


class ConversationModel(Model):
    """Like `Model`, but it answers from every user message it was sent, so a run that was sent
    another run's conversation answers for that run too."""

    def __init__(self) -> None:
        super().__init__()
        self.conversations: list[list[str]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        with self._lock:
            self.conversations.append(users)
        reply = super().__call__(body)
        if reply.tool_calls:
            return reply
        return Reply(content=" | ".join(users) + " finished")


def test_three_workers_answer_each_of_twelve_queued_runs_from_its_own_conversation(
    postgres_url: str, tmp_path: Path
) -> None:
    """Three workers, one run at a time each, 12 queued runs; the worker running the chosen run
    is SIGKILLed while that run's `deliver` call is in flight and a replacement recovers it."""
    (tmp_path / "blocking-run").write_text(FLEET_BLOCKING_RUN)
    os.mkfifo(tmp_path / "gate")
    effects, blocked = tmp_path / "effects", tmp_path / "blocked"
    model = ConversationModel()

    def fleet(mode: str, executor: str) -> Any:
        return start(mode, postgres_url, executor, tmp_path, server, runs=FLEET_RUNS, concurrency=0)

    with FakeOpenAIServer(record=False) as server:
        server.chat.respond_with(model)
        finish(fleet("enqueue", "web"))
        workers = {name: fleet("work", name) for name in ("w0", "w1", "w2")}
        everyone = list(workers.values())
        with stopped_at_exit(everyone):
            wait_for(lambda: lines(blocked), f"{FLEET_BLOCKING_RUN} to start delivering", everyone)
            (victim_pid,) = map(int, lines(blocked))
            (victim,) = [name for name, p in workers.items() if p.pid == victim_pid]
            os.kill(victim_pid, signal.SIGKILL)
            workers[victim].wait(timeout=HANG_GUARD)
            assert workers[victim].returncode == -signal.SIGKILL
            everyone.remove(workers[victim])

            replacement = fleet("work", victim)
            everyone.append(replacement)
            wait_for(lambda: len(lines(blocked)) == 2, f"{FLEET_BLOCKING_RUN} to resume", everyone)
            with (tmp_path / "gate").open("w") as gate:
                gate.write("go")
            answers = json.loads(finish(fleet("collect", "web")))

    runs = [f"run-{n}" for n in range(FLEET_RUNS)]
    # every run's answer is its own: each model request carried that run's message alone
    assert answers == {run: ["completed", f"{run} finished"] for run in runs}
    assert all(len(users) == 1 for users in model.conversations), model.conversations
    assert len(model.conversations) == 3 * FLEET_RUNS
    # only the call in flight at the kill ran twice (it began twice, and took effect once)
    assert len(lines(blocked)) == 2
    ran = Counter(" ".join(line.split()[:2]) for line in lines(effects))
    assert ran == Counter({f"{run} {tool}": 1 for run in runs for tool in TOOLS})
    assert model.seen == Counter({(run, done): 1 for run in runs for done in range(3)})
    assert len({line.split()[2] for line in lines(effects)}) >= 2  # spread over workers
