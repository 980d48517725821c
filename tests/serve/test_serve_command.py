"""`promptimus serve` as a real process: it refuses to listen beyond this machine without a
token, and SIGTERM stops it taking requests while the running ones finish and are stored."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import openai
from locations import SUPPORT
from serve_support import free_port

from promptimus.sessions import SQLiteSessionStore

TARGET = f"{SUPPORT / 'served_target.py'}:agent"
BOUND = 60.0  # seconds a step may take (a hang guard, not a speed check)


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "promptimus", "serve", TARGET, *args]


def test_another_host_without_a_token_is_refused() -> None:
    done = subprocess.run(
        command("--host", "0.0.0.0"), capture_output=True, text=True, timeout=BOUND
    )
    assert done.returncode == 2
    assert "give callers tokens" in done.stderr and "Traceback" not in done.stderr


def test_a_bad_tokens_file_is_refused(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("only-one-word\n")
    done = subprocess.run(
        command("--tokens-file", str(tokens)), capture_output=True, text=True, timeout=BOUND
    )
    assert done.returncode == 2 and "TOKEN USER" in done.stderr


def test_a_bad_conversation_cap_is_refused_by_name() -> None:
    done = subprocess.run(
        command("--max-conversations", "0"), capture_output=True, text=True, timeout=BOUND
    )
    assert done.returncode == 2
    assert "max_conversations" in done.stderr and "Traceback" not in done.stderr


def test_a_board_url_that_is_not_a_web_address_is_refused() -> None:
    done = subprocess.run(
        command("--board-url", "javascript:alert(1)"), capture_output=True, text=True, timeout=BOUND
    )
    assert done.returncode == 2
    assert "board_url" in done.stderr and "Traceback" not in done.stderr


def wait_for(condition: object) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)


def test_sigterm_lets_the_running_request_finish_and_keeps_its_turn(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    store_path = tmp_path / "chats.db"
    port = free_port()
    tokens = tmp_path / "tokens"
    tokens.write_text("# callers\nalice-token-1 alice\nbob-token-22 bob\n")
    log = (tmp_path / "log").open("wb")
    process = subprocess.Popen(
        command(
            "--port",
            str(port),
            "--store",
            str(store_path),
            "--tokens-file",
            str(tokens),
            "--grace",
            "60",
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "SERVED_GATE": str(gate), "PYTHONUNBUFFERED": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:

        def up() -> bool:
            try:
                return httpx.get(f"{url}/healthz").status_code == 200
            except httpx.TransportError:
                assert process.poll() is None, (tmp_path / "log").read_text()
                return False

        wait_for(up)
        answers: list[str] = []

        def ask() -> None:
            sdk = openai.OpenAI(base_url=f"{url}/v1", api_key="alice-token-1", max_retries=0)
            stream = sdk.chat.completions.create(
                model="x",
                messages=[{"role": "user", "content": "finish me"}],
                user="c",
                stream=True,
            )
            answers.append("".join(c.choices[0].delta.content or "" for c in stream))

        asking = threading.Thread(target=ask)
        asking.start()
        wait_for(lambda: gate.with_suffix(".started").exists())
        process.send_signal(signal.SIGTERM)

        def refusing() -> bool:
            try:
                httpx.get(f"{url}/healthz")
            except httpx.TransportError:
                return True
            return False

        wait_for(refusing)  # no new request is taken
        gate.write_text("open")
        asking.join(BOUND)
        assert answers == ["heard: finish me"]
        assert process.wait(BOUND) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
    store = SQLiteSessionStore(store_path)
    import asyncio

    assert len(asyncio.run(store.load_turns("5:alice:c"))) == 1
    store.close()
