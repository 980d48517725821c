"""What a process knows of the durable runs it executes itself: who waits for a change (a pause,
the end) and who listens to a run's stream events. A run executing elsewhere is seen through the
database instead (`DurableAgent.result` looks again every `poll_interval`).

Workflows recovered by `DBOS.launch()` run on DBOS's own event loop, in another thread, so
wake-ups cross threads with `call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Listeners", "Watchers"]


class Watchers:
    """Futures waiting for a change of a run, by workflow id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_run: dict[str, set[asyncio.Future[None]]] = {}

    def watch(self, workflow_id: str) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._lock:
            self._by_run.setdefault(workflow_id, set()).add(future)
        return future

    def drop(self, workflow_id: str, future: asyncio.Future[None]) -> None:
        with self._lock:
            futures = self._by_run.get(workflow_id)
            if futures is not None:
                futures.discard(future)
                if not futures:
                    del self._by_run[workflow_id]

    def changed(self, workflow_id: str) -> None:
        with self._lock:
            futures = list(self._by_run.get(workflow_id, ()))
        for future in futures:
            future.get_loop().call_soon_threadsafe(_settle, future)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Listeners:
    """The callback that receives a run's stream events, by workflow id (one caller each)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_run: dict[str, Callable[[Any], object]] = {}

    def add(self, workflow_id: str, listener: Callable[[Any], object]) -> bool:
        with self._lock:
            if workflow_id in self._by_run:
                return False
            self._by_run[workflow_id] = listener
            return True

    def remove(self, workflow_id: str) -> None:
        with self._lock:
            self._by_run.pop(workflow_id, None)

    def get(self, workflow_id: str) -> Callable[[Any], object] | None:
        with self._lock:
            return self._by_run.get(workflow_id)


watchers = Watchers()
listeners = Listeners()
