"""The fake OpenAI server of a benchmark, run in a child process of its own (its own GIL), so the
CPU time the benchmark's process spends is the client's alone.

The benchmark script re-runs itself with an argument that makes it call `serve`; the parent
wraps that command in `spawned`, which yields the server's base URL once it listens.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

from promptimus.testing import FakeOpenAIServer


def serve(respond: Callable[[dict[str, Any]], Any], latency: float = 0.0) -> None:
    """Serve chat completions answered by `respond(request body)`, each `latency` seconds
    late, until interrupted; prints ``READY <base url>`` once listening."""
    server = FakeOpenAIServer(record=False, latency=latency)
    server.chat.respond_with(respond)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(server.serve_forever(lambda url: print(f"READY {url}", flush=True)))


@contextlib.contextmanager
def spawned(command: list[str]) -> Iterator[str]:
    """Start `command` (a script calling `serve`) and yield its base URL; stopped on exit."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"the fake OpenAI server did not start (printed {line!r})")
        yield line.split(" ", 1)[1].strip()
    finally:
        process.terminate()
        process.wait(10)
