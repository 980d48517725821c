"""`BackgroundServer`: how the fake servers run, on an event loop of their own in a daemon thread.

A server class gives `_start_http()` (listen; return the port) and `_stop_http()` (close every
connection), `host`, the port it was asked for (`_requested_port`) and its name for errors
(`_label`); this base starts and stops the thread and makes the server a sync and an async
context manager.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from types import TracebackType
from typing import Self

from promptimus.errors import FakeServerError

__all__ = ["START_TIMEOUT", "BackgroundServer"]

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
