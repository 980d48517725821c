"""`RedisSessionStore`: conversations in Redis (redis-py's asyncio client:
`pip install "promptimus[redis]"`), shared by any number of workers, expired by Redis itself.

Per conversation two keys, named after the SHA-256 of its id (so an id is never part of a key
pattern, whatever characters it holds): a sorted set of turns (score: the turn's number, member:
`"<number>:<json>"`) and the counter that numbers them. Appending is one Lua script, which Redis
runs atomically: take the next number, add the turn, trim to `max_turns`, renew the expiry of
both keys (`ttl`), note the conversation in the index (a sorted set of ids by last write, for
`list_sessions` and `prune`). Reading is one `ZRANGEBYSCORE` from a turn number up.

The client and its connections belong to the event loop that made them (redis-py's asyncio
client is bound to one), so a store used from several loops keeps one client per loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import (
    InvalidStoreAddress,
    OptionalDependencyMissing,
    SessionStoreAuthenticationFailed,
    SessionStoreCorrupt,
    SessionStoreError,
    SessionStoreFull,
)
from .addresses import mask_secrets_in_logs, redis_address
from .base import Clock, ServerStore, StoredTurn, check_limits, check_session_id, check_wait

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.commands.core import AsyncScript

__all__ = ["RedisSessionStore"]

log = logging.getLogger("promptimus.sessions")

# KEYS: turns, counter, index. ARGV: payload, now (ms), ttl (ms, 0: none), max_turns (0: all), id
_APPEND = """
local seq = redis.call('INCR', KEYS[2])
if seq == 1 then
    redis.call('DEL', KEYS[1])
end
redis.call('ZADD', KEYS[1], seq, seq .. ':' .. ARGV[1])
local keep = tonumber(ARGV[4])
if keep > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', seq - keep)
end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
    redis.call('PEXPIRE', KEYS[1], ttl)
    redis.call('PEXPIRE', KEYS[2], ttl)
end
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[5])
return seq
"""


class _Client:
    """One event loop's connection pool and registered script."""

    __slots__ = ("append", "redis")

    def __init__(self, redis: Redis, append: AsyncScript) -> None:
        self.redis = redis
        self.append = append


class RedisSessionStore(ServerStore):
    """Conversations in the Redis database at `url` (`redis://[:password@]host:port/db`,
    `rediss://` for TLS). The password never appears in its repr or its errors.

    - `max_turns`: keep at most this many turns per conversation, the newest (None: all).
    - `ttl`: seconds a conversation is kept after its last turn; Redis expires it (None: kept
      until deleted). `prune()` drops expired ids from the index `list_sessions` reads.
    - `prefix`: the first part of every key, to share a database with other data.
    - `timeout`: seconds to connect and to wait for an answer before `SessionStoreUnavailable`.
    - `clock`: the time in seconds (`time.time`) used for the index of last writes.
    """

    _settings = ("max_turns", "ttl", "prefix", "timeout", "clock")

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        max_turns: int | None = None,
        ttl: float | None = None,
        prefix: str = "promptimus",
        timeout: float = 10.0,
        clock: Clock = time.time,
    ) -> None:
        self.ttl = check_limits("RedisSessionStore", max_turns, ttl)
        self.max_turns = max_turns
        self._address = redis_address(url)
        self._url = url
        self.prefix = prefix
        self.timeout = check_wait("RedisSessionStore", "timeout", timeout)
        self._masked = mask_secrets_in_logs(
            self._address, "redis.asyncio.connection", "redis.connection"
        )
        self.clock = clock
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Client] = (
            weakref.WeakKeyDictionary()
        )

    # --- keys --------------------------------------------------------------------------------

    def _keys(self, session_id: str) -> tuple[str, str]:
        digest = hashlib.sha256(check_session_id(session_id).encode()).hexdigest()
        return f"{self.prefix}:turns:{digest}", f"{self.prefix}:seq:{digest}"

    @property
    def _index(self) -> str:
        return f"{self.prefix}:sessions"

    # --- conversations -----------------------------------------------------------------------

    async def load_turns(self, session_id: str, since: int = 0) -> list[StoredTurn]:
        turns_key, _ = self._keys(session_id)
        members = await self._run(
            # as bytes: a member that is not UTF-8 is a damaged turn, named as such below
            lambda c: c.redis.execute_command(  # type: ignore[no-untyped-call]
                "ZRANGEBYSCORE", turns_key, since, "+inf", NEVER_DECODE=True
            ),
            "read",
        )
        turns = []
        for raw in members:
            try:
                member = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise SessionStoreCorrupt(
                    f"{self!r}: session {session_id!r} holds an entry that is not UTF-8 text. "
                    "Delete the conversation (`await store.delete(id)`)."
                ) from None
            number, colon, payload = member.partition(":")
            if not colon or not number.isdigit():
                raise SessionStoreCorrupt(
                    f"{self!r}: session {session_id!r} holds an entry that is not a turn. Delete "
                    "the conversation (`await store.delete(id)`)."
                )
            turns.append(StoredTurn(int(number), payload))
        return turns

    async def append_turn(self, session_id: str, payload: str) -> int:
        turns_key, counter_key = self._keys(session_id)
        ttl_ms = 0 if self.ttl is None else max(1, round(self.ttl * 1000))
        now_ms = round(self.clock() * 1000)
        arguments: list[str | int] = [payload, now_ms, ttl_ms, self.max_turns or 0, session_id]
        keys = [turns_key, counter_key, self._index]
        seq = await self._run(lambda c: c.append(keys=keys, args=arguments), "write")
        return int(seq)

    async def list_sessions(self) -> list[str]:
        low = "-inf" if self.ttl is None else f"({self._cutoff_ms()}"
        ids = await self._run(lambda c: c.redis.zrangebyscore(self._index, low, "+inf"), "read")
        return sorted(ids)

    async def delete(self, session_id: str) -> bool:
        turns_key, counter_key = self._keys(session_id)

        async def delete(client: _Client) -> bool:
            async with client.redis.pipeline(transaction=True) as pipe:
                pipe.delete(turns_key, counter_key)
                pipe.zrem(self._index, session_id)
                removed_keys, removed_id = await pipe.execute()
            return bool(removed_keys or removed_id)

        return await self._run(delete, "write")  # type: ignore[no-any-return]

    async def prune(self) -> int:
        """Drop the ids of expired conversations from the index (Redis already dropped their
        turns); returns how many."""
        if self.ttl is None:
            return 0
        cutoff = self._cutoff_ms()
        removed = await self._run(
            lambda c: c.redis.zremrangebyscore(self._index, "-inf", cutoff), "write"
        )
        return int(removed)

    def _cutoff_ms(self) -> int:
        return round((self.clock() - (self.ttl or 0.0)) * 1000)

    # --- a response cache for CachedLLM, and a resume ledger ----------------------------------

    async def get(self, key: str) -> str | None:
        """A cached reply (`CachedLLM`); a failed read is a miss, with a warning."""
        try:
            return await self._run(lambda c: c.redis.get(f"{self.prefix}:reply:{key}"), "read")  # type: ignore[no-any-return]
        except SessionStoreError as exc:
            log.warning("%s: cache read failed (%s); treated as a miss", self, exc)
            return None

    async def put(self, key: str, value: str) -> None:
        """Store a reply (`CachedLLM`); a failed write is logged and skipped."""
        try:
            await self._run(lambda c: c.redis.set(f"{self.prefix}:reply:{key}", value), "write")
        except SessionStoreError as exc:
            log.warning("%s: cache write failed (%s); reply not stored", self, exc)

    async def claim(self, state_id: str) -> bool:
        """True the first time a paused run's id is claimed, across every worker (the resume
        ledger: `set_resume_ledger(store)`)."""
        key = f"{self.prefix}:resumed:{hashlib.sha256(state_id.encode()).hexdigest()}"
        return bool(await self._run(lambda c: c.redis.set(key, 1, nx=True), "write"))

    # --- connections -------------------------------------------------------------------------

    async def _run(self, command: Callable[[_Client], Awaitable[Any]], what: str) -> Any:
        client = self._client()
        from redis.exceptions import RedisError

        try:
            return await command(client)
        except (RedisError, OSError) as exc:
            error = self._error(exc, what)
        raise error  # outside the except block: no chained driver error that may quote the URL

    def _client(self) -> _Client:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            try:
                from redis.asyncio import Redis
            except ImportError as exc:
                raise OptionalDependencyMissing(
                    'RedisSessionStore needs redis-py: pip install "promptimus[redis]".'
                ) from exc
            try:
                redis = Redis.from_url(
                    self._url,
                    decode_responses=True,
                    socket_connect_timeout=self.timeout,
                    socket_timeout=self.timeout,
                )
            except ValueError:
                failed = True  # its message may quote the password: never raised, nor chained
            else:
                failed = False
            if failed:
                raise InvalidStoreAddress(
                    f"{self!r}: redis-py cannot read this URL "
                    "(redis://[[user]:password@]host:port/db, percent-encoding the password)."
                )
            client = self._clients[loop] = _Client(redis, redis.register_script(_APPEND))
        return client

    def _error(self, exc: BaseException, what: str) -> SessionStoreError:
        import redis.exceptions as errors

        detail = self._address.redact(f"{type(exc).__name__}: {exc}").strip()
        where = f"{self!r} could not {what}"
        text = str(exc)
        if isinstance(
            exc, errors.AuthenticationError | errors.AuthenticationWrongNumberOfArgsError
        ):
            return SessionStoreAuthenticationFailed(
                f"{where}: Redis refused the user name or password ({detail}). Check the "
                "credentials in the store's URL (a special character in the password must be "
                "percent-encoded)."
            )
        if isinstance(exc, errors.ResponseError) and "OOM command not allowed" in text:
            return SessionStoreFull(
                f"{where}: Redis is at its maxmemory ({detail}). Raise maxmemory, set ttl= "
                "or max_turns=, or delete old conversations."
            )
        if isinstance(exc, errors.ResponseError) and "WRONGTYPE" in text:
            return SessionStoreCorrupt(
                f"{where}: a key it uses holds other data ({detail}). Use another prefix= or "
                "database, or delete the conversation."
            )
        if isinstance(exc, errors.ConnectionError | errors.TimeoutError | OSError):
            return self._unavailable(where, detail, "Redis", "password")
        return SessionStoreError(f"{where} ({detail}).")

    async def aclose(self) -> None:
        """Close the running event loop's connections (a later use opens new ones)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.redis.aclose()
