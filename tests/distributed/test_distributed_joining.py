"""`RayRunner` joining a cluster: an address where nothing listens fails at once, one that
accepts but never answers is bounded by `start_timeout`, and the event loop keeps running while
Ray is joined. Each case runs in a subprocess: a `ray.init` still retrying must not outlive it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import asyncio, json, socket, sys
from promptimus import Module
from promptimus.distributed import RayRunner
from promptimus.errors import WorkersUnavailable
from promptimus.evals import Example, evaluate

class Echo(Module):
    async def forward(self, text):
        return text

async def attempt(address, start_timeout):
    ticks = 0

    async def tick():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    ticker = asyncio.create_task(tick())
    runner = RayRunner(address=address, num_workers=1, start_timeout=start_timeout)
    try:
        await evaluate(Echo(), [Example({"text": "a"}, "a")], lambda e, o: 1.0,
                       runner=runner, progress=False)
        outcome = ["joined", ""]
    except WorkersUnavailable as exc:
        outcome = [type(exc).__name__, str(exc)]
    ticker.cancel()
    return outcome + [ticks]

silent = socket.socket()  # accepts connections, never says a word
silent.bind(("127.0.0.1", 0))
silent.listen(16)
port = silent.getsockname()[1]
refused = asyncio.run(attempt("127.0.0.1:1", 60))
hanging = asyncio.run(attempt(f"127.0.0.1:{port}", 3))
print(json.dumps({"refused": refused, "hanging": hanging}))
sys.stdout.flush()
import os; os._exit(0)  # the ray.init still retrying in its thread ends with the process
"""


def test_an_address_nothing_answers_at_fails_and_joining_is_bounded_off_the_loop(
    tmp_path: Path,
) -> None:
    script = tmp_path / "join.py"
    script.write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    kind, message, _ = result["refused"]
    assert kind == "WorkersUnavailable"
    assert "127.0.0.1:1: nothing answers there" in message and "ray start --head" in message
    kind, message, ticks = result["hanging"]
    assert kind == "WorkersUnavailable"
    assert "within start_timeout=3 s" in message
    assert ticks > 0  # the event loop ran while Ray was being joined
