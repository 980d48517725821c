"""`PostgresSessionStore`: conversations in PostgreSQL (psycopg 3 and its connection pool:
`pip install "promptimus[postgres]"`), shared by any number of workers on any number of machines.

Tables as in the SQLite store: `promptimus_sessions` (per conversation: its last turn number,
the first number of its current life, when it was last written) and `promptimus_turns`
(primary key (session, number)). Appending a turn is one statement: an upsert on the
conversation's row takes the next number (the row lock orders concurrent appends: a second
append waits for the first to commit, then takes the number after it), inserts the turn and
drops the turns `max_turns` or an expiry leave behind. A reader therefore never sees turn n+1
before turn n. Each statement runs in autocommit on a pooled connection; the tables are created
on first use (under an advisory lock, so workers starting at once do not clash).

The pool belongs to the event loop that opened it (psycopg's async pool is bound to one), so a
store used from several loops (notebooks, `asyncio.run` in a script) keeps one pool per loop.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..argument_checks import non_negative_int, positive_int
from ..errors import (
    InvalidArgument,
    OptionalDependencyMissing,
    SessionStoreAuthenticationFailed,
    SessionStoreCorrupt,
    SessionStoreError,
    SessionStoreFull,
)
from .addresses import mask_secrets_in_logs, postgres_address
from .base import Clock, ServerStore, StoredTurn, check_limits, check_session_id, check_wait

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

__all__ = ["PostgresSessionStore"]

log = logging.getLogger("promptimus.sessions")
T = TypeVar("T")

_SCHEMA_LOCK = 0x70726F6D  # pg_advisory_xact_lock key while creating the tables
_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS promptimus_sessions (
        session_id TEXT PRIMARY KEY,
        last_seq BIGINT NOT NULL,
        first_seq BIGINT NOT NULL,
        updated DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS promptimus_sessions_updated ON promptimus_sessions (updated)",
    """CREATE TABLE IF NOT EXISTS promptimus_turns (
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        payload TEXT NOT NULL,
        created DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (session_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS promptimus_cached_replies (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    "CREATE TABLE IF NOT EXISTS promptimus_resumed_runs (id TEXT PRIMARY KEY)",
]

# An expired conversation starts a new life at the next number (first_seq); the turns before it
# and those past max_turns go in the same statement. The DELETE and the INSERT never touch the
# same key, so they can share one statement.
_APPEND = """
WITH head AS (
    INSERT INTO promptimus_sessions AS s (session_id, last_seq, first_seq, updated)
    VALUES (%(id)s, 1, 1, %(now)s)
    ON CONFLICT (session_id) DO UPDATE SET
        last_seq = s.last_seq + 1,
        first_seq = CASE WHEN s.updated <= %(cutoff)s THEN s.last_seq + 1 ELSE s.first_seq END,
        updated = EXCLUDED.updated
    RETURNING last_seq, first_seq
), dropped AS (
    DELETE FROM promptimus_turns
    WHERE session_id = %(id)s AND seq < (
        SELECT GREATEST(first_seq, last_seq + 1 - COALESCE(%(keep)s, last_seq + 1)) FROM head
    )
), added AS (
    INSERT INTO promptimus_turns (session_id, seq, payload, created)
    SELECT %(id)s, last_seq, %(payload)s, %(now)s FROM head
)
SELECT last_seq FROM head
"""

_LOAD = """
SELECT t.seq, t.payload FROM promptimus_turns AS t
JOIN promptimus_sessions AS s ON s.session_id = t.session_id
WHERE t.session_id = %s AND t.seq >= GREATEST(%s, s.first_seq) AND s.updated > %s
ORDER BY t.seq
"""


class PostgresSessionStore(ServerStore):
    """Conversations in the PostgreSQL database at `url` (`postgresql://user:password@host/db`,
    or a libpq `key=value` string). The password never appears in its repr or its errors.

    - `max_turns`: keep at most this many turns per conversation, the newest (None: all).
    - `ttl`: seconds a conversation is kept after its last turn; an older one reads as empty
      and is deleted by `prune()` or by its next turn (None: kept until deleted).
    - `min_size` / `max_size`: connections the pool keeps open / may open (per event loop).
    - `timeout`: seconds to wait for a connection (to open one, or for a free one) before
      `SessionStoreUnavailable`.
    - `clock`: the time in seconds (`time.time`) used for `ttl`; every worker should agree.

    Close it when done (`await store.aclose()`, or `async with store:`): a pool left open when
    its event loop ends may have a maintenance task that ignores the loop's cancellation (a
    psycopg_pool behaviour), and the process then cannot exit.
    """

    _settings = ("max_turns", "ttl", "min_size", "max_size", "timeout", "clock")

    def __init__(
        self,
        url: str,
        *,
        max_turns: int | None = None,
        ttl: float | None = None,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
        clock: Clock = time.time,
    ) -> None:
        self.ttl = check_limits("PostgresSessionStore", max_turns, ttl)
        self.max_turns = max_turns
        self._address = postgres_address(url)
        self._url = url
        self.min_size = non_negative_int(min_size, "PostgresSessionStore(min_size=...)")
        self.max_size = positive_int(max_size, "PostgresSessionStore(max_size=...)")
        if self.min_size > self.max_size:
            raise InvalidArgument(
                f"PostgresSessionStore(min_size={min_size!r}) must not exceed "
                f"max_size={max_size!r}: the pool cannot keep more connections than it may open."
            )
        self.timeout = check_wait("PostgresSessionStore", "timeout", timeout)
        self.clock = clock
        # the pool logs its failures (WARNING): never with this store's password in them
        self._masked = mask_secrets_in_logs(self._address, "psycopg.pool", "psycopg")
        self._pools: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, AsyncConnectionPool[Any]
        ] = weakref.WeakKeyDictionary()
        self._opening: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    # --- conversations -----------------------------------------------------------------------

    async def load_turns(self, session_id: str, since: int = 0) -> list[StoredTurn]:
        check_session_id(session_id)
        rows = await self._fetch(_LOAD, (session_id, since, self._expired_before()), "read")
        return [StoredTurn(seq, payload) for seq, payload in rows]

    async def append_turn(self, session_id: str, payload: str) -> int:
        check_session_id(session_id)
        parameters = {
            "id": session_id,
            "now": self.clock(),
            "cutoff": self._expired_before(),
            "keep": self.max_turns,
            "payload": payload,
        }
        rows = await self._fetch(_APPEND, parameters, "write")
        return int(rows[0][0])

    async def list_sessions(self) -> list[str]:
        rows = await self._fetch(
            "SELECT session_id FROM promptimus_sessions WHERE updated > %s ORDER BY session_id",
            (self._expired_before(),),
            "read",
        )
        return [session_id for (session_id,) in rows]

    async def delete(self, session_id: str) -> bool:
        check_session_id(session_id)

        async def delete(db: AsyncConnection[Any]) -> bool:
            async with db.transaction():
                # the row lock first: an append in flight commits before the turns are deleted
                cursor = await db.execute(
                    "SELECT 1 FROM promptimus_sessions WHERE session_id = %s FOR UPDATE",
                    (session_id,),
                )
                existed = await cursor.fetchone() is not None
                await db.execute(
                    "DELETE FROM promptimus_sessions WHERE session_id = %s", (session_id,)
                )
                await db.execute(
                    "DELETE FROM promptimus_turns WHERE session_id = %s", (session_id,)
                )
            return existed

        return await self._run(delete, "write")

    async def prune(self) -> int:
        if self.ttl is None:
            return 0
        cutoff = self._expired_before()

        async def prune(db: AsyncConnection[Any]) -> int:
            async with db.transaction():
                cursor = await db.execute(
                    "DELETE FROM promptimus_sessions WHERE updated <= %s RETURNING session_id",
                    (cutoff,),
                )
                gone = [session_id for (session_id,) in await cursor.fetchall()]
                await db.execute("DELETE FROM promptimus_turns WHERE session_id = ANY(%s)", (gone,))
            return len(gone)

        return await self._run(prune, "write")

    def _expired_before(self) -> float:
        return -math.inf if self.ttl is None else self.clock() - self.ttl

    # --- a response cache for CachedLLM, and a resume ledger ----------------------------------

    async def get(self, key: str) -> str | None:
        """A cached reply (`CachedLLM`); a failed read is a miss, with a warning."""
        try:
            rows = await self._fetch(
                "SELECT value FROM promptimus_cached_replies WHERE key = %s", (key,), "read"
            )
        except SessionStoreError as exc:
            log.warning("%s: cache read failed (%s); treated as a miss", self, exc)
            return None
        return rows[0][0] if rows else None

    async def put(self, key: str, value: str) -> None:
        """Store a reply (`CachedLLM`); a failed write is logged and skipped."""
        try:
            await self._fetch(
                "INSERT INTO promptimus_cached_replies (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (key, value),
                "write",
                rows=False,
            )
        except SessionStoreError as exc:
            log.warning("%s: cache write failed (%s); reply not stored", self, exc)

    async def claim(self, state_id: str) -> bool:
        """True the first time a paused run's id is claimed, across every worker (the resume
        ledger: `set_resume_ledger(store)`)."""
        rows = await self._fetch(
            "INSERT INTO promptimus_resumed_runs (id) VALUES (%s) ON CONFLICT DO NOTHING "
            "RETURNING id",
            (state_id,),
            "write",
        )
        return bool(rows)

    # --- connections -------------------------------------------------------------------------

    async def _fetch(self, query: str, parameters: Any, what: str, rows: bool = True) -> list[Any]:
        async def run(db: AsyncConnection[Any]) -> list[Any]:
            cursor = await db.execute(query, parameters)
            return await cursor.fetchall() if rows else []

        return await self._run(run, what)

    async def _run(self, body: Callable[[AsyncConnection[Any]], Awaitable[T]], what: str) -> T:
        import psycopg
        import psycopg_pool

        pool = await self._pool()
        try:
            async with pool.connection(timeout=self.timeout) as db:
                return await body(db)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            error = self._error(exc, what)
        raise error  # outside the except block: no chained driver error that may quote the URL

    async def _pool(self) -> AsyncConnectionPool[Any]:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is not None:
            return pool
        lock = self._opening.setdefault(loop, asyncio.Lock())
        async with lock:
            pool = self._pools.get(loop)
            if pool is None:
                pool = await self._open()
                self._pools[loop] = pool
        return pool

    async def _open(self) -> AsyncConnectionPool[Any]:
        try:
            import psycopg
            import psycopg_pool  # noqa: F401 - the pool is opened below
        except ImportError as exc:
            raise OptionalDependencyMissing(
                "PostgresSessionStore needs psycopg 3 and psycopg_pool: "
                'pip install "promptimus[postgres]".'
            ) from exc
        # the password goes apart from the connection string, which the pool may log
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": self._connect_timeout,
            **self._address.secrets,
        }
        try:
            # one connection first, made here: a refused password or a missing database is
            # reported at once (the pool would retry it until the timeout), and it makes the
            # tables
            await self._create_tables(
                await psycopg.AsyncConnection.connect(self._address.conninfo, **kwargs)
            )
        except psycopg.Error as exc:
            error = self._error(exc, "connect")
        else:
            return await self._open_pool(kwargs)
        raise error  # outside the except block: no chained driver error that may quote the URL

    async def _create_tables(self, db: AsyncConnection[Any]) -> None:
        async with db, db.transaction():
            await db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in _SCHEMA:
                await db.execute(statement)

    async def _open_pool(self, kwargs: dict[str, Any]) -> AsyncConnectionPool[Any]:
        import psycopg
        import psycopg_pool

        pool = psycopg_pool.AsyncConnectionPool(
            self._address.conninfo,
            min_size=self.min_size,
            max_size=self.max_size,
            open=False,
            timeout=self.timeout,
            kwargs=kwargs,
            name="promptimus-sessions",
        )
        try:
            await pool.open(wait=True, timeout=self.timeout)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            error = self._error(exc, "connect")
        except BaseException:
            await self._close(pool)
            raise
        else:
            return pool
        await self._close(pool)
        raise error  # outside the except block: no chained driver error that may quote the URL

    def _error(self, exc: BaseException, what: str) -> SessionStoreError:
        import psycopg
        import psycopg_pool

        # the first line only: a DETAIL line may quote a whole row (a user's messages)
        message = getattr(getattr(exc, "diag", None), "message_primary", None) or str(exc)
        detail = self._address.redact(f"{type(exc).__name__}: {message}").strip()
        where = f"{self!r} could not {what}"
        if _refused_sign_in(exc):
            return SessionStoreAuthenticationFailed(
                f"{where}: the server refused the user name or password ({detail}). Check the "
                "credentials in the store's URL (a special character in the password must be "
                "percent-encoded)."
            )
        if isinstance(exc, psycopg.errors.DiskFull | psycopg.errors.OutOfMemory):
            return SessionStoreFull(
                f"{where}: the server is out of room ({detail}). Free space, or prune old "
                "conversations (`ttl=` and `await store.prune()`, `max_turns=`)."
            )
        if isinstance(exc, psycopg.errors.DataCorrupted | psycopg.errors.IndexCorrupted):
            return SessionStoreCorrupt(
                f"{where}: the server reports damaged data ({detail}). Repair the tables or "
                "restore them from a backup."
            )
        if isinstance(exc, psycopg_pool.PoolTimeout | psycopg.OperationalError):
            return self._unavailable(where, detail, "PostgreSQL", "user")
        return SessionStoreError(f"{where} ({detail}).")

    async def aclose(self) -> None:
        """Close the pool of the running event loop (a later use opens a new one)."""
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            await self._close(pool)

    async def _close(self, pool: AsyncConnectionPool[Any]) -> None:
        # Longer than a connection attempt may take: a pool worker still connecting when the
        # wait ends would be left running, and it survives the loop's shutdown (it swallows
        # the cancellation), so the process could not exit.
        await pool.close(timeout=self._connect_timeout + 5)

    @property
    def _connect_timeout(self) -> int:
        return max(1, math.ceil(self.timeout))


# SQLSTATE class 28: invalid authorization (a wrong password, an unknown user, no pg_hba entry)
_SIGN_IN_STATES = ("28000", "28P01")


def _refused_sign_in(exc: BaseException) -> bool:
    """Whether `exc` (a psycopg error) says the server refused the credentials."""
    if getattr(exc, "sqlstate", None) in _SIGN_IN_STATES:
        return True
    text = str(exc)
    return "password authentication failed" in text or "no pg_hba.conf entry" in text
