"""What the durable-run tests share: a DBOS instance per test on a SQLite file, torn down after,
and worker processes of tests/support/durable_crash_worker.py driven to a stopping point and killed.

Workers are real processes. Most are forked by one `--serve` process per test module (`forks`),
which skips the imports a fresh interpreter would pay for at every kill point; `start_worker`
starts a fresh interpreter instead."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from dbos import DBOS
from durable_crash_worker import dbos_config
from locations import REPO

WORKER = Path(__file__).with_name("durable_crash_worker.py")
REACH_BOUND = 120.0  # seconds a worker may take to start and reach its point (a hang guard)


@pytest.fixture
def dbos_db(tmp_path: Path) -> Iterator[Path]:
    """A SQLite file for DBOS; whatever DBOS the test launched is destroyed after it."""
    yield tmp_path / "runs.sqlite"
    DBOS.destroy(destroy_registry=True)


@pytest.fixture(params=["sqlite", "postgres"])
def system_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path | str]:
    """DBOS's system database: a SQLite file, or a new database on the test run's PostgreSQL
    server; whatever DBOS the test launched is destroyed after it."""
    if request.param == "sqlite":
        yield tmp_path / "runs.sqlite"
    else:
        yield request.getfixturevalue("postgres_url")
    DBOS.destroy(destroy_registry=True)


def configure(db: Path | str, executor_id: str | None = None) -> None:
    DBOS(config=dbos_config(db, executor_id))  # type: ignore[arg-type]


def worker_args(db: Path | str, base_url: str, log: Path, *args: str) -> list[str]:
    return [str(db), "--base-url", base_url, "--log", str(log), *args]


@dataclass
class Worker:
    """A worker process: a fresh interpreter (`proc`) or one forked by the fork server."""

    output: Path
    proc: subprocess.Popen[bytes] | None = None
    pid: int = 0
    server: ForkServer | None = field(default=None, repr=False)

    def failure(self) -> str:
        return self.output.read_text(errors="replace")[-4000:] if self.output.exists() else ""

    def exited(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is not None
        try:  # a forked worker is the server's child: a zombie until the server reaps it
            return Path(f"/proc/{self.pid}/stat").read_text().split(") ")[1][0] == "Z"
        except (OSError, IndexError):
            return False

    def kill(self) -> int:
        """SIGKILL it and return how it ended (a negative signal number when killed)."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            return self.proc.wait()
        assert self.server is not None
        os.kill(self.pid, signal.SIGKILL)
        status = self.server.wait(self.pid)
        return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)

    def finish(self) -> list[str]:
        """The lines it printed (`status ...`, `answer ...`), once it exited by itself
        (successfully)."""
        if self.proc is not None:
            self.proc.wait(timeout=REACH_BOUND)
            code = self.proc.returncode
        else:
            assert self.server is not None
            code = os.WEXITSTATUS(self.server.wait(self.pid))
        assert code == 0, self.failure()
        lines = self.output.read_text().splitlines()  # DBOS's log lines share the file
        return [line for line in lines if line.startswith(("status ", "answer "))]


class ForkServer:
    """The `--serve` process of tests/support/durable_crash_worker.py."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=REPO,
        )

    def _ask(self, line: str) -> list[str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{line}\n".encode())
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().decode().split()
        if not answer:
            pytest.fail(f"the fork server ended ({self.proc.poll()}) instead of answering {line!r}")
        return answer

    def start(self, output: Path, argv: list[str]) -> Worker:
        _, pid = self._ask(" ".join(["run", str(output), *argv]))
        return Worker(output, pid=int(pid), server=self)

    def wait(self, pid: int) -> int:
        _, status = self._ask(f"wait {pid}")
        return int(status)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=REACH_BOUND)


@pytest.fixture(scope="module")
def forks() -> Iterator[ForkServer]:
    server = ForkServer()
    yield server
    server.close()


def signal_fifo(tmp_path: Path) -> tuple[Path, int]:
    """A FIFO a worker signals on, opened for reading (without waiting for the writer)."""
    fifo = tmp_path / f"signal-{time.monotonic_ns()}"
    os.mkfifo(fifo)
    return fifo, os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)


def start_worker(
    tmp_path: Path,
    db: Path | str,
    base_url: str,
    log: Path,
    *args: str,
    stop_at: str = "none",
    forks: ForkServer | None = None,
) -> tuple[Worker, int | None]:
    """Start a worker (forked by `forks`, else a fresh interpreter); with a `stop_at` point,
    also return the fd of the FIFO it signals on."""
    fd = None
    argv = worker_args(db, base_url, log, *args)
    if stop_at != "none":
        fifo, fd = signal_fifo(tmp_path)
        argv += ["--signal", str(fifo), "--stop-at", stop_at]
    output = tmp_path / f"worker-{time.monotonic_ns()}.out"
    if forks is not None:
        return forks.start(output, argv), fd
    with output.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), *argv], stdout=out, stderr=out, cwd=REPO
        )
    return Worker(output, proc=proc), fd


def kill_at(worker: Worker, fd: int, point: str) -> None:
    """Wait until the worker says it reached `point`, then SIGKILL it."""
    data = b""
    deadline = time.monotonic() + REACH_BOUND
    try:
        while b"\n" not in data:
            if worker.exited():
                pytest.fail(f"the worker exited before reaching {point}:\n{worker.failure()}")
            if time.monotonic() > deadline:
                worker.kill()
                pytest.fail(f"the worker did not reach {point}:\n{worker.failure()}")
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                data += os.read(fd, 1024)
    finally:
        os.close(fd)
    assert data.decode().strip() == f"reached {point}"
    assert worker.kill() == -signal.SIGKILL


def finish(worker: Worker) -> list[str]:
    return worker.finish()
