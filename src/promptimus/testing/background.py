"""`BackgroundServer`: how the fake servers run, on an event loop of their own in a daemon thread.

A server class gives `_start_http()` (listen; return the port) and `_stop_http()` (close every
connection), `host`, the port it was asked for (`_requested_port`) and its name for errors
(`_label`); this base starts and stops the thread and makes the server a sync and an async
context manager.

For benchmarks, where the client must not share a GIL with the server, a fake server module runs
as a child process: `serve_from_command_line` is its `python -m` entry point (prints
``READY <base url>`` once listening), and `spawn_server` starts one and yields a
`SpawnedServer`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from promptimus.errors import FakeServerError

__all__ = [
    "START_TIMEOUT",
    "BackgroundServer",
    "SpawnedServer",
    "serve_from_command_line",
    "spawn_server",
]

START_TIMEOUT = 10.0
"""Seconds to wait for the server's thread to start listening, or to stop."""


class BackgroundServer:
    """Start, stop and context-manager methods of a fake server (see the module docstring)."""

    _label = "fake"
    host: str
    _requested_port: int
    _port: int | None
    _loop: asyncio.AbstractEventLoop | None
    _thread: threading.Thread | None

    async def _start_http(self) -> int:
        raise NotImplementedError

    async def _stop_http(self) -> None:
        raise NotImplementedError

    def start(self) -> Self:
        """Start serving in a background thread with its own event loop; returns self."""
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        name = f"{self._label.lower().replace(' ', '-')}-server"
        thread = threading.Thread(target=loop.run_forever, name=name, daemon=True)
        thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start_http(), loop)
        try:
            self._port = future.result(START_TIMEOUT)
        except Exception as exc:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(START_TIMEOUT)
            loop.close()
            raise FakeServerError(
                f"The {self._label} server could not listen on {self.host}:"
                f"{self._requested_port} ({exc}); pick another port or use port=0."
            ) from exc
        self._loop, self._thread = loop, thread
        return self

    def stop(self) -> None:
        """Stop serving: every open connection (stalled ones included) is closed at once."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop_http(), loop).result(START_TIMEOUT)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(START_TIMEOUT)
        if not thread.is_alive():
            loop.close()
        self._loop = self._thread = None
        self._port = None

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await asyncio.to_thread(self.start)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)


@dataclass(frozen=True, slots=True)
class SpawnedServer:
    """A fake server running in a child process (see `FakeOpenAIServer.spawn`)."""

    base_url: str
    port: int
    api_key: str
    process: subprocess.Popen[str]


@contextlib.contextmanager
def spawn_server(
    module: str, label: str, api_key: str, reply: str | None, latency_ms: float
) -> Iterator[SpawnedServer]:
    """Run the fake server of `module` (`python -m module`) in a child process (own GIL) for the
    duration of the block; `label` names it in errors, `api_key` is the key it takes."""
    cmd = [sys.executable, "-m", module, "--port", "0"]
    if reply is not None:
        cmd += ["--reply", reply]
    if latency_ms:
        cmd += ["--latency-ms", str(latency_ms)]
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        line = _first_line(process, START_TIMEOUT)
        if not line.startswith("READY "):
            raise FakeServerError(
                f"The {label} server subprocess did not start (printed {line!r}, exit code "
                f"{process.poll()}); run `{' '.join(cmd)}` by hand to see why."
            )
        base_url = line.split(" ", 1)[1].strip()
        port = int(base_url.rsplit(":", 1)[1].split("/", 1)[0])
        yield SpawnedServer(base_url=base_url, port=port, api_key=api_key, process=process)
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _first_line(process: subprocess.Popen[str], timeout: float) -> str:
    """The child's first stdout line, or "" if it prints nothing within ``timeout`` seconds."""
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.append(process.stdout.readline() if process.stdout else ""),
        daemon=True,
    )
    reader.start()
    reader.join(timeout)
    return lines[0] if lines else ""


def serve_from_command_line(
    make: Callable[..., Any], module: str, api: str, argv: list[str] | None
) -> None:
    """The `python -m module` entry point of a fake server: serve `api` (named in the help)
    until killed, printing ``READY <base_url>`` once listening. `make(host, port,
    default_reply=..., latency=..., record=False)` builds the server."""
    parser = argparse.ArgumentParser(
        prog=f"python -m {module}",
        description=f"Serve {api} until killed; prints 'READY <base_url>'.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--reply", default=None, help="reply text (default: echo)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay before each response")
    args = parser.parse_args(argv)
    server = make(
        args.host, args.port, default_reply=args.reply, latency=args.latency_ms / 1000, record=False
    )

    def announce(base_url: str) -> None:
        print(f"READY {base_url}", flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve_forever(announce))
