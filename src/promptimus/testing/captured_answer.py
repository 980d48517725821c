"""A connection that keeps the answer instead of sending it: how the fake batch endpoints run
each line of a batch through the same handler (script, faults, checks) a live request meets."""

from __future__ import annotations

import json
from typing import Any

from promptimus.testing import payloads
from promptimus.testing.http import HttpConnection

__all__ = ["CapturedConnection", "capture"]


class CapturedConnection(HttpConnection):
    """Takes one complete response (`send`); anything a live socket alone can do (a stream, a
    dropped or stalled connection) is kept as a 500, as a batch worker would report it."""

    def __init__(self) -> None:  # no socket behind it
        self.request = None
        self.responded = False
        self.closing = False
        self.status = 500
        self.body: Any = None

    async def send(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.responded = True
        self.status = status
        try:
            self.body = json.loads(body)
        except ValueError:
            self.status, self.body = 500, None

    async def start_stream(self, *args: Any, **kwargs: Any) -> None:
        raise _NotInABatch

    async def send_slowly(self, *args: Any, **kwargs: Any) -> None:
        raise _NotInABatch

    async def send_partial(self, *args: Any, **kwargs: Any) -> None:
        raise _NotInABatch

    def close(self) -> None:
        self.responded = True

    def drop(self) -> None:
        self.responded = True

    async def wait_peer_closed(self) -> None:
        return None


class _NotInABatch(Exception):
    """Raised into the handler when it tries to stream: the batch line fails with a 500."""


async def capture(handler: Any, body: dict[str, Any]) -> tuple[int, Any]:
    """``handler(body, connection)``'s answer as (status, JSON body); (500, None) when it
    could not be answered in one piece."""
    connection = CapturedConnection()
    try:
        await handler(body, connection)
    except _NotInABatch:
        return 500, None
    except payloads.BadRequest as exc:
        return 400, payloads.error_body(400, f"fake server: {exc}")
    except Exception as exc:  # a responder's bug: that line fails, as on a live request
        return 500, payloads.error_body(500, f"fake server: {exc!r}")
    return connection.status, connection.body
