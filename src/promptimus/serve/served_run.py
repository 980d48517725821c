"""One run of the served module for one request: in its caller's session, in a task of its own,
its events handed to the protocol that asked, cancelled when that client goes away.

The run holds one of the server's run slots from the moment the request is accepted until it
ends, so `max_concurrent_runs` counts streams still sending too. A cancelled run writes nothing:
its turn of the stored conversation is never committed, so the conversation stays as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from ..agents.base_agent import BaseAgent
from ..agents.events import AgentEvent, FinalResult
from ..agents.run_state import RunState
from ..core.module import Module
from ..core.session import Session
from ..dto import Usage
from ..dto.run_record import RunRecord
from ..observe.usage import track_usage
from .refusal import Refused

__all__ = ["ClientGone", "RunSlots", "ServedRun"]


class ClientGone(Exception):
    """The client disconnected; its run was cancelled."""


class RunSlots:
    """At most `limit` runs at once; one more is refused with 503 and Retry-After."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.busy = 0

    def take(self) -> None:
        if self.busy >= self.limit:
            raise Refused(
                503,
                f"The server is running its limit of {self.limit} requests at once; try again "
                "in a moment.",
                "server_busy",
                {"Retry-After": "1"},
            )
        self.busy += 1

    def release(self) -> None:
        self.busy -= 1


@dataclass
class _End:
    error: BaseException | None


class ServedRun:
    """Starts at once (the slot must already be taken); `events(request)` yields the run's
    events, the last a `FinalResult` or `NeedsApproval`, and raises what the run raised."""

    def __init__(
        self,
        module: Module,
        request: Any,
        session: Session,
        slots: RunSlots,
        *,
        resume: RunState | None = None,
        approvals: Mapping[str, Any] | None = None,
        deps: Any = None,
    ) -> None:
        self.usage = Usage()
        self._queue: asyncio.Queue[AgentEvent | _End] = asyncio.Queue()
        self._task = asyncio.create_task(
            self._produce(module, request, session, resume, approvals, deps)
        )
        # released when the task ends, however: a task cancelled before its first step never
        # runs its own `finally`
        self._task.add_done_callback(lambda _: slots.release())

    async def _produce(
        self,
        module: Module,
        request: Any,
        session: Session,
        resume: RunState | None,
        approvals: Mapping[str, Any] | None,
        deps: Any,
    ) -> None:
        try:
            with track_usage() as report, session:
                if isinstance(module, BaseAgent):
                    stream = module.stream(
                        None if resume is not None else request,
                        deps,
                        resume=resume,
                        approvals=approvals,
                    )
                    async for event in stream:
                        self._queue.put_nowait(event)
                else:
                    output = await module(request)
                    self._queue.put_nowait(FinalResult(output, RunRecord(output=output)))
            total = report.total
            self.usage = Usage(
                prompt_tokens=total.prompt_tokens,
                completion_tokens=total.completion_tokens,
                total_tokens=total.total_tokens,
                cached_tokens=total.cached_tokens,
                reasoning_tokens=total.reasoning_tokens,
            )
        except asyncio.CancelledError:
            self._queue.put_nowait(_End(ClientGone()))
            raise
        except Exception as exc:
            self._queue.put_nowait(_End(exc))
        else:
            self._queue.put_nowait(_End(None))

    async def events(self, request: Request | None) -> AsyncGenerator[AgentEvent, None]:
        """The run's events as they happen; a disconnect of `request`'s client cancels the run
        and raises `ClientGone`."""
        watcher = asyncio.create_task(_disconnected(request))
        try:
            while True:
                item = self._queue.get_nowait() if not self._queue.empty() else None
                if item is None:
                    getter = asyncio.create_task(self._queue.get())
                    done, _ = await asyncio.wait(
                        {getter, watcher}, return_when=asyncio.FIRST_COMPLETED
                    )
                    if getter not in done:
                        getter.cancel()
                        raise ClientGone()
                    item = getter.result()
                if isinstance(item, _End):
                    if item.error is not None:
                        raise item.error
                    return
                yield item
        finally:
            watcher.cancel()
            await self.cancel()

    async def cancel(self) -> None:
        """Stop the run if it still runs (it then writes nothing) and wait until it has."""
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def _disconnected(request: Request | None) -> None:
    if request is None:
        await asyncio.Event().wait()
        return
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
