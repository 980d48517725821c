"""What the durable-run tests share: a DBOS instance per test on a SQLite file, torn down after,
and the worker process of tests/durable_crash_worker.py driven to a stopping point."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dbos import DBOS
from durable_crash_worker import dbos_config

WORKER = Path(__file__).with_name("durable_crash_worker.py")
REACH_BOUND = 120.0  # seconds a worker may take to start and reach its point (a hang guard)


@pytest.fixture
def dbos_db(tmp_path: Path) -> Iterator[Path]:
    """A SQLite file for DBOS; whatever DBOS the test launched is destroyed after it."""
    yield tmp_path / "runs.sqlite"
    DBOS.destroy(destroy_registry=True)


def configure(db: Path, executor_id: str | None = None) -> None:
    DBOS(config=dbos_config(db, executor_id))  # type: ignore[arg-type]


@dataclass
class Worker:
    proc: subprocess.Popen[bytes]
    stderr: Path

    def failure(self) -> str:
        return self.stderr.read_text(errors="replace")[-4000:]


def start_worker(
    tmp_path: Path, db: Path, base_url: str, log: Path, *args: str, stop_at: str = "none"
) -> tuple[Worker, int | None]:
    """Start a worker; with a `stop_at` point, also open the FIFO it signals on (the fd)."""
    fd = None
    command = [sys.executable, str(WORKER), str(db), "--base-url", base_url, "--log", str(log)]
    if stop_at != "none":
        fifo = tmp_path / f"signal-{time.monotonic_ns()}"
        os.mkfifo(fifo)
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        command += ["--signal", str(fifo), "--stop-at", stop_at]
    stderr = tmp_path / f"worker-{time.monotonic_ns()}.err"
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            [*command, *args], stdout=subprocess.PIPE, stderr=err, cwd=WORKER.parent.parent
        )
    return Worker(proc, stderr), fd


def kill_at(worker: Worker, fd: int, point: str) -> None:
    """Wait until the worker says it reached `point`, then SIGKILL it."""
    data = b""
    deadline = time.monotonic() + REACH_BOUND
    try:
        while b"\n" not in data:
            if worker.proc.poll() is not None:
                pytest.fail(
                    f"the worker exited ({worker.proc.returncode}) before reaching {point}:\n"
                    + worker.failure()
                )
            if time.monotonic() > deadline:
                worker.proc.kill()
                pytest.fail(f"the worker did not reach {point}:\n{worker.failure()}")
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                data += os.read(fd, 1024)
    finally:
        os.close(fd)
    assert data.decode().strip() == f"reached {point}"
    worker.proc.send_signal(signal.SIGKILL)
    worker.proc.wait()
    assert worker.proc.returncode == -signal.SIGKILL


def finish(worker: Worker) -> list[str]:
    """The lines a worker printed, once it exited by itself (successfully)."""
    out, _ = worker.proc.communicate(timeout=REACH_BOUND)
    assert worker.proc.returncode == 0, worker.failure()
    return out.decode().splitlines()
