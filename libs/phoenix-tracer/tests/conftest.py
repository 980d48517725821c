"""A real Phoenix server for the session: `phoenix serve` on 127.0.0.1, free ports, a temporary
working directory, telemetry off; stopped when the session ends. If it cannot start, the tests
that need it fail with the reason and the server's log (they are never skipped)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

_START_TIMEOUT = 180.0  # a cold start migrates its SQLite database; 2 shared cores are slow


@dataclass(frozen=True)
class PhoenixServer:
    base_url: str
    collector: str
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(no log: {exc})"


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer]:
    work = tmp_path_factory.mktemp("phoenix")
    log = work / "server.log"
    port, grpc_port = _free_port(), _free_port()
    executable = shutil.which("phoenix", path=str(Path(sys.executable).parent))
    command = (
        [executable, "serve"]
        if executable
        else [sys.executable, "-m", "phoenix.server.main", "serve"]
    )
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    for name in ("PHOENIX_COLLECTOR_ENDPOINT", "PHOENIX_SQL_DATABASE_URL", "PHOENIX_API_KEY"):
        env.pop(name, None)
    base_url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=work)
    try:
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"Phoenix exited with code {process.returncode} before serving:\n{_tail(log)}",
                    pytrace=False,
                )
            try:
                with urllib.request.urlopen(f"{base_url}/healthz", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"Phoenix did not answer {base_url}/healthz within {_START_TIMEOUT:.0f} s:\n"
                    f"{_tail(log)}",
                    pytrace=False,
                )
            time.sleep(0.5)
        yield PhoenixServer(base_url, f"{base_url}/v1/traces", log)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
