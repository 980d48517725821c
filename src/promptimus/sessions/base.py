"""`SessionStore`: where conversations outlive the process (the Protocol every store satisfies),
and what the three stores share: their settings and how they name themselves in errors.

A store keeps, per session id, an append-only log of turns numbered 1, 2, 3, ... without gaps
(see `promptimus.core.stored_conversation` for what a turn holds and how a `Session` reads the
log). Appending is atomic and takes the next number even when many processes append to one
conversation at once; `max_turns` keeps only the newest turns; a conversation idle for `ttl`
seconds is gone (Redis expires it itself; the SQL stores hide it on read and delete it on
`prune()` or on its next append).

The same stores also serve as a `CachedLLM` response cache (`get` / `put`) and as the resume
ledger of approval pauses (`claim`), so one database serves a fleet of workers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Self

from ..argument_checks import finite_number
from ..core.session import check_session_id
from ..errors import InvalidArgument, SessionStoreUnavailable
from ..pickled_settings import PickledAsSettings
from ..protocols.session_store import SessionStore, StoredTurn
from .addresses import ServerAddress

__all__ = ["SessionStore", "StoredTurn", "check_session_id"]


def check_limits(owner: str, max_turns: int | None, ttl: float | None) -> float | None:
    """Validate `max_turns` and `ttl` (seconds) for a store; returns ttl as a float."""
    if max_turns is not None and (
        isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1
    ):
        raise InvalidArgument(
            f"{owner}(max_turns=...) must be an int >= 1 or None, got {max_turns!r}."
        )
    if ttl is None:
        return None
    if (
        isinstance(ttl, bool)
        or not isinstance(ttl, int | float)
        or not (math.isfinite(ttl) and ttl > 0)
    ):
        raise InvalidArgument(
            f"{owner}(ttl=...) must be a number of seconds > 0 or None, got {ttl!r}."
        )
    return float(ttl)


MAX_WAIT_SECONDS = 2_147_483.0
"""The longest wait a store accepts (`timeout=`, `busy_timeout=`): the drivers count it in whole
milliseconds or seconds in a 32-bit integer, and no one means a wait of weeks."""


def check_wait(owner: str, name: str, value: object, *, positive: bool = True) -> float:
    """`value` (seconds to wait) as a float: a finite number (> 0 with `positive`, else >= 0)
    of at most `MAX_WAIT_SECONDS`; `InvalidArgument` naming `owner(name=...)` otherwise."""
    seconds = finite_number(value, f"{owner}({name}=...)", positive=positive)
    if seconds > MAX_WAIT_SECONDS:
        raise InvalidArgument(
            f"{owner}({name}=...) must be at most {MAX_WAIT_SECONDS:g} seconds, got {value!r}."
        )
    return seconds


Clock = Callable[[], float]


class ServerStore(PickledAsSettings):
    """What the stores reached by URL (PostgreSQL, Redis) share: pickled as their settings, so a
    worker process opens connections of its own; named by their URL without its password (in
    their repr, hence in every error and log line that names them; its URL is checked when it
    is made, so a driver never misreads and quotes it); closed by `aclose()` or by
    leaving ``async with``."""

    _url: str
    _address: ServerAddress  # the URL checked, split and masked (see .addresses)
    _positional = "_url"
    timeout: float  # seconds to wait for the server

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        raise NotImplementedError

    def _unavailable(
        self, where: str, detail: str, server: str, who: str
    ) -> SessionStoreUnavailable:
        """The error for a server that cannot be reached or did not answer in time."""
        return SessionStoreUnavailable(
            f"{where}: the server cannot be reached or did not answer within "
            f"{self.timeout:g}s ({detail}). Check that {server} runs at that "
            f"address and accepts this {who}."
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._address.shown!r})"
