"""Helpers for tests/serve: a served app under a real uvicorn on a free port of 127.0.0.1, in a
thread of its own (its own event loop), until the block ends."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn

START_BOUND = 60.0  # seconds the server may take to start (a hang guard, not a speed check)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Running:
    url: str
    port: int
    loop: asyncio.AbstractEventLoop

    def call(self, coroutine: Any) -> Any:
        """Run `coroutine` on the server's loop (to read the store it writes, say)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(START_BOUND)


@contextmanager
def serving(asgi: Any) -> Iterator[Running]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    loops: list[asyncio.AbstractEventLoop] = []

    def main() -> None:
        loop = asyncio.new_event_loop()
        loops.append(loop)
        loop.run_until_complete(server.serve())
        loop.close()

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    started = threading.Event()
    for _ in range(int(START_BOUND * 20)):
        if server.started:
            started.set()
            break
        if not thread.is_alive():
            break
        started.wait(0.05)
    if not server.started:
        server.should_exit = True
        raise RuntimeError("the served app did not start")
    try:
        yield Running(f"http://127.0.0.1:{port}", port, loops[0])
    finally:
        server.should_exit = True
        thread.join(START_BOUND)
