"""Many worker processes, one conversation: real subprocesses, each with its own store object
and agent, talking to the fake OpenAI server over HTTP (tests/support/session_worker.py), against
each store on a real database."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

from locations import SUPPORT

from promptimus.testing import FakeOpenAIServer, Fault

WORKER = SUPPORT / "session_worker.py"
HANG_GUARD = 600.0  # seconds: only so a broken run fails instead of hanging the suite


def start_worker(backend: Any, server: FakeOpenAIServer, name: str, turns: int) -> Any:
    command = [sys.executable, str(WORKER), backend.kind, backend.target, "--session", "shared"]
    command += ["--name", name, "--turns", str(turns), "--base-url", server.base_url]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def exchanges(backend: Any) -> list[list[tuple[str, str]]]:
    """Each stored turn of "shared", in order, as its (role, text) messages."""

    async def read() -> list[Any]:
        store = backend.make()
        try:
            return await store.load_turns("shared")  # type: ignore[no-any-return]
        finally:
            await store.aclose()

    turns = asyncio.run(read())
    assert [t.seq for t in turns] == list(range(1, len(turns) + 1))
    stored = []
    for turn in turns:
        ((key, (op, messages)),) = json.loads(turn.payload)["changes"]
        assert (key, op) == ("root.predictor", "extend")
        stored.append([(m["role"], m["content"]) for m in messages])
    return stored


def test_four_workers_append_exactly_one_hundred_whole_turns(backend: Any) -> None:
    with FakeOpenAIServer(record=False) as server:
        workers = [start_worker(backend, server, f"w{k}", 25) for k in range(4)]
        for worker in workers:
            out, err = worker.communicate(timeout=HANG_GUARD)
            assert worker.returncode == 0, err
            assert out.split() == [word for n in range(25) for word in ("done", str(n))]
    stored = exchanges(backend)
    assert len(stored) == 100
    expected = {f"w{k} turn {n}" for k in range(4) for n in range(25)}
    # every turn whole: its request and the reply to it, nothing else, nothing lost or doubled
    assert all(
        turn == [("user", text), ("assistant", f"echo: {text}")]
        for turn in stored
        for text in [turn[0][1]]
    )
    assert sorted(turn[0][1] for turn in stored) == sorted(expected)
    for k in range(4):  # each worker's turns in the order it made them
        mine = [turn[0][1] for turn in stored if turn[0][1].startswith(f"w{k} ")]
        assert mine == [f"w{k} turn {n}" for n in range(25)]


def test_a_worker_killed_mid_turn_leaves_only_whole_turns_and_a_fresh_one_continues(
    backend: Any,
) -> None:
    with FakeOpenAIServer() as server:
        server.chat.script("one", "two", "three", Fault.stall())  # the 4th request never ends
        worker = start_worker(backend, server, "first", 10)
        try:
            for n in range(3):
                assert worker.stdout.readline().split() == ["done", str(n)]
            while server.in_flight == 0:  # until the 4th turn has sent its request and waits
                assert worker.poll() is None, "the worker ended before its 4th turn"
                time.sleep(0.01)
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait(timeout=HANG_GUARD)
        finally:
            if worker.poll() is None:
                worker.kill()
            worker.communicate()
        assert worker.returncode == -signal.SIGKILL

        assert exchanges(backend) == [
            [("user", "first turn 0"), ("assistant", "one")],
            [("user", "first turn 1"), ("assistant", "two")],
            [("user", "first turn 2"), ("assistant", "three")],
        ]

        server.chat.script("four")
        fresh = start_worker(backend, server, "second", 1)
        out, err = fresh.communicate(timeout=HANG_GUARD)
        assert fresh.returncode == 0, err
        assert out.split() == ["done", "0"]
        sent = server.chat.requests[-1]["messages"]
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "first turn 0"),
        ("assistant", "one"),
        ("user", "first turn 1"),
        ("assistant", "two"),
        ("user", "first turn 2"),
        ("assistant", "three"),
        ("user", "second turn 0"),
    ]
    assert exchanges(backend)[-1] == [("user", "second turn 0"), ("assistant", "four")]
