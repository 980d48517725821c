"""Helpers for tests/board: a `promptimus board` started as a real process on a free port, and
a Chromium page (Debian's, driven by Playwright) that notes every console error."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
START_BOUND = 60.0  # seconds the board may take to answer (a hang guard, not a speed check)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Board:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


@contextmanager
def board_process(log: Path, *args: str) -> Iterator[Board]:
    """`promptimus board ARGS --port <free>` until the block ends; fails with its log if it
    does not answer."""
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "promptimus", "board", *args, "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_BOUND
        while True:
            try:
                with urllib.request.urlopen(url + "/runs", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the board did not start:\n{log.read_text()}") from None
                time.sleep(0.2)
        yield Board(url, process, log)
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class Console:
    """Errors a page wrote to its console or threw, by page."""

    errors: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        page.on(
            "console",
            lambda message: (
                self.errors.append(f"{page.url}: {message.text}")
                if message.type == "error"
                else None
            ),
        )
        page.on("pageerror", lambda error: self.errors.append(f"{page.url}: {error}"))


@contextmanager
def chromium_page() -> Iterator[tuple[Any, Console]]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            console = Console()
            console.watch(page)
            page.on("dialog", lambda dialog: dialog.accept())
            yield page, console
        finally:
            browser.close()


def screenshot(page: Any, name: str, folder: Path) -> Path:
    """A PNG of the page into `folder`, and into `$PROMPTIMUS_BOARD_SCREENSHOTS` (the docs'
    images folder) when that is set."""
    path = folder / f"board-{name}.png"
    page.screenshot(path=str(path), full_page=False)
    target = os.environ.get("PROMPTIMUS_BOARD_SCREENSHOTS")
    if target:
        Path(target, path.name).write_bytes(path.read_bytes())
    return path
