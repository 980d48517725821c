"""A request the server answers with an error status instead of running it; each protocol words
it in its own error shape."""

from __future__ import annotations

__all__ = ["Refused"]


class Refused(Exception):
    """`status` and what to tell the client (`code` a short machine-readable word); `headers`
    go with the answer (Retry-After on 503)."""

    def __init__(
        self, status: int, message: str, code: str, headers: dict[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.headers = headers or {}
