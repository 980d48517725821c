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
import re
from collections.abc import Callable
from typing import Self
from urllib.parse import unquote, urlsplit, urlunsplit

from ..core.session import check_session_id
from ..errors import InvalidArgument, SessionStoreUnavailable
from ..pickled_settings import PickledAsSettings
from ..protocols.session_store import SessionStore, StoredTurn

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


_PASSWORD_PARAMETER = re.compile(r"(?i)(password\s*=\s*)([^&\s]+)")


def redacted_url(url: str) -> str:
    """`url` (a URL or a libpq `key=value` string) with its password masked."""
    try:
        parts = urlsplit(url)
        if "@" in parts.netloc:
            userinfo, _, host = parts.netloc.rpartition("@")
            if ":" in userinfo:
                userinfo = userinfo.split(":", 1)[0] + ":***"
            url = urlunsplit((parts.scheme, f"{userinfo}@{host}", *parts[2:]))
    except ValueError:
        return "<an unparsable URL>"
    return _PASSWORD_PARAMETER.sub(r"\1***", url)


def redacted(text: str, url: str) -> str:
    """`text` (a driver's error message) without the password of `url`."""
    secrets = [match.group(2) for match in _PASSWORD_PARAMETER.finditer(url)]
    try:
        password = urlsplit(url).password or ""
        secrets += [password, unquote(password)]
    except ValueError:
        pass
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


Clock = Callable[[], float]


class ServerStore(PickledAsSettings):
    """What the stores reached by URL (PostgreSQL, Redis) share: pickled as their settings, so a
    worker process opens connections of its own; named by their URL without its password (in
    their repr, hence in every error and log line that names them); closed by `aclose()` or by
    leaving ``async with``."""

    _url: str
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
        return f"{type(self).__name__}({redacted_url(self._url)!r})"
