"""Sync tools run on reused daemon threads: a quick call does not pay for a new thread, and a
hung call keeps its own thread without holding up anyone else (the hang safety itself, with
`asyncio.run()` and interpreter exit, is in test_tool_timeout.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import threading

import pytest

from promptimus.errors import ToolTimeout
from promptimus.tools import Tool

CAP = 30.0


async def test_sequential_sync_calls_reuse_one_thread() -> None:
    seen: list[threading.Thread] = []

    @Tool.decorate
    def where() -> str:
        """Say which thread runs this."""
        seen.append(threading.current_thread())
        return threading.current_thread().name

    names = [await asyncio.wait_for(where.call({}), CAP) for _ in range(3)]

    assert names == ["promptimus-tool-where"] * 3
    assert seen[0] is seen[1] is seen[2]
    assert seen[0] is not threading.main_thread() and seen[0].daemon


async def test_a_hung_sync_call_keeps_its_thread_and_the_next_call_gets_another() -> None:
    release = threading.Event()
    threads: dict[str, threading.Thread] = {}

    @Tool.decorate(timeout=0.05)
    def stuck() -> str:
        """Block until released."""
        threads["stuck"] = threading.current_thread()
        release.wait()
        return "late"

    @Tool.decorate
    def quick() -> str:
        """Answer at once."""
        threads["quick"] = threading.current_thread()
        return "quick"

    try:
        with pytest.raises(ToolTimeout):
            await asyncio.wait_for(stuck.call({}), CAP)
        assert await asyncio.wait_for(quick.call({}), CAP) == "quick"
        assert threads["quick"] is not threads["stuck"]
        assert threads["stuck"].is_alive()  # abandoned, still blocked, not joined
    finally:
        release.set()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_wait_on_threads_it_does_not_have() -> None:
    script = textwrap.dedent(
        """
        import asyncio, os
        from promptimus.tools import Tool

        @Tool.decorate
        def hello() -> str:
            '''Say hello.'''
            return "hello"

        print(asyncio.run(hello.call({})), flush=True)  # leaves an idle tool thread behind
        pid = os.fork()
        if pid == 0:
            answer = asyncio.run(asyncio.wait_for(hello.call({}), 10))
            os._exit(0 if answer == "hello" else 1)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status))
        """
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.split() == ["hello", "child", "0"], done.stderr
