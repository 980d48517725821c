"""Joining a Ray cluster and watching workers start, for `RayRunner`, without blocking the loop.

- `check_reachable(address, within)`: an address like `10.0.0.5:6379` or `ray://head:10001`
  where nothing listens is named at once (`ray.init` would retry it for as long as it likes).
- `in_daemon_thread(fn, hold)`: `ray.init` blocks; it runs in a daemon thread, so the event loop
  keeps running and `start_timeout` can bound it (a thread still trying when the timeout expires
  is left to end with the process). The thread then waits for `hold` to be set: the processes a
  local Ray starts are bound to the thread that started them (they end when it ends), so it must
  live until Ray is shut down.
- `StartWatch`: a worker process that dies while starting (its interpreter cannot import ray,
  promptimus or the user's code) leaves Ray retrying, and the actor pending, for ever. On the
  driver's own node the raylet writes such a process's error to `raylet.err` in the session's log
  folder; the watch reads what was added there since the workers were asked for, and counts the
  tracebacks.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..errors import WorkersUnavailable

__all__ = ["StartFailures", "StartWatch", "check_reachable", "in_daemon_thread"]

T = TypeVar("T")

_CHECK_AT_MOST = 10.0  # seconds for the TCP check; ray.init's own bound is start_timeout
_TRACEBACK = "Traceback (most recent call last):"
_ERROR_LINE = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception|Exit)\b.*$", re.MULTILINE)
_READ_AT_MOST = 1 << 20  # bytes of new log text looked at, per look


def _host_port(address: str | None) -> tuple[str, int] | None:
    if not address:
        return None
    spec = address.removeprefix("ray://")
    host, sep, port = spec.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None  # "auto", "local", a name Ray resolves itself
    return host.strip("[]"), int(port)


async def check_reachable(address: str | None, within: float) -> None:
    """`WorkersUnavailable` when nothing accepts a connection at `address`'s host and port."""
    target = _host_port(address)
    if target is None:
        return
    try:
        async with asyncio.timeout(min(within, _CHECK_AT_MOST)):
            _, writer = await asyncio.open_connection(*target)
    except TimeoutError:
        return  # slow to answer, not refused: ray.init, bounded by start_timeout, decides
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise WorkersUnavailable(
            f"RayRunner could not join the Ray cluster at {address}: nothing answers there "
            f"({reason}). Start the cluster (ray start --head) or pass its head's address."
        ) from None
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


def in_daemon_thread(fn: Callable[[], T], hold: threading.Event) -> asyncio.Future[T]:
    """`fn()` in a new daemon thread, which then lives until `hold` is set; `fn`'s result (or
    exception) in the returned future."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():  # cancelled: the caller stopped waiting
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def body() -> None:
        try:
            result, error = fn(), None
        except BaseException as exc:  # handed to the waiting coroutine
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, result, error)
        if error is None:
            hold.wait()

    threading.Thread(target=body, name="promptimus-ray-join", daemon=True).start()
    return future


@dataclass(frozen=True)
class StartFailures:
    """`count` worker processes died while starting; `error` is the last one's error line."""

    count: int
    error: str


class StartWatch:
    """What the raylet of the driver's node reports about worker processes from now on."""

    def __init__(self, path: Path, offset: int) -> None:
        self._path = path
        self._offset = offset

    @classmethod
    def begin(cls) -> StartWatch | None:
        """A watch from the log's current end; None when this process has no local node."""
        try:
            from ray._private import worker  # the node's log folder has no public accessor

            node: Any = worker._global_node
            logs = Path(node.get_logs_dir_path())
        except Exception:  # a client connection, or another Ray: nothing to watch
            return None
        path = logs / "raylet.err"
        try:
            offset = path.stat().st_size
        except OSError:
            offset = 0
        return cls(path, offset)

    def failures(self) -> StartFailures | None:
        """The worker processes that died while starting since `begin`, if any did."""
        try:
            with self._path.open("rb") as file:
                file.seek(self._offset)
                text = file.read(_READ_AT_MOST).decode("utf-8", "replace")
        except OSError:
            return None
        count = text.count(_TRACEBACK)
        if count == 0:
            return None
        last = text[text.rindex(_TRACEBACK) :]
        errors = _ERROR_LINE.findall(last)
        lines = [line.strip() for line in last.splitlines() if line.strip()]
        return StartFailures(count, (errors[-1] if errors else lines[-1]).strip())
