"""Sessions: per-conversation state for one shared module tree.

A module tree holds the *program* (prompts, tools, sub-agents). Conversation state (memory)
belongs to a session, so one tree can serve many users at once:

    alice, bob = Session("alice"), Session("bob")
    with alice:
        await agent("hi, I'm Alice")      # runs in Alice's history
    async with bob:
        await agent("hi, I'm Bob")        # Bob's history; Alice's is untouched

The current session is a context variable, so it follows `await`s and is copied into tasks
created inside it (`asyncio.gather`, `create_task`). Outside any session, modules use their own
default state.

With a store (`Session("alice", store=SQLiteSessionStore("app.db"))`, see
`promptimus.sessions`) the conversation outlives the process. Each outermost module call made in
the session is one *turn* (`promptimus.core.stored_conversation`): it starts by catching up with
the store, works on its own copy of every state it touches, and once it has returned, writes
what it changed as one unit. A turn that fails writes nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..errors import InvalidArgument, InvalidSessionId, SessionStateError
from .stored_conversation import StoredConversation, Turn, stored_conversation

if TYPE_CHECKING:
    from ..protocols.session_store import SessionStore

T = TypeVar("T")

MAX_SESSION_ID_CHARS = 256
"""The longest session id a store keeps (an e-mail address fits; so does any UUID)."""

# A stack, not a token list on the Session: one Session may be entered by many tasks at once, and
# each task's context carries its own copy of the stack.
_stack: contextvars.ContextVar[tuple[Session, ...]] = contextvars.ContextVar(
    "promptimus_sessions", default=()
)
# The stored session whose turn has not begun in this context: the next module call begins one.
# One read per module call is all a program without stores pays for them.
_pending: contextvars.ContextVar[Session | None] = contextvars.ContextVar(
    "promptimus_pending_turn", default=None
)
_turn: contextvars.ContextVar[Turn | None] = contextvars.ContextVar("promptimus_turn", default=None)


def check_session_id(session_id: object) -> str:
    """`session_id` if a store can keep it as plain data, else `InvalidSessionId`."""
    if not isinstance(session_id, str):
        raise InvalidSessionId(
            f"A session id must be text, got {type(session_id).__name__}. Use str(your_id)."
        )
    if not session_id:
        raise InvalidSessionId("A session id must not be empty: give each conversation a name.")
    if len(session_id) > MAX_SESSION_ID_CHARS:
        raise InvalidSessionId(
            f"A session id may be at most {MAX_SESSION_ID_CHARS} characters, got "
            f"{len(session_id)}. Use a shorter id (a hash or a UUID of the long one)."
        )
    if "\x00" in session_id:
        raise InvalidSessionId(
            "A session id must not contain a NUL character (PostgreSQL text cannot hold one)."
        )
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidSessionId(
            "A session id must be valid Unicode text (it holds a lone surrogate)."
        ) from None
    return session_id


class Session:
    """Holds per-conversation state, keyed by the object that owns it (e.g. a memory module).

    `store` (a session store from `promptimus.sessions`) keeps the conversation across
    processes: `name` is then its id in the store, and each state is kept under the key its
    owner gives (a memory module's path).
    """

    __slots__ = ("__weakref__", "_state", "name", "store")

    def __init__(self, name: str | None = None, *, store: SessionStore | None = None) -> None:
        self.name = name
        self.store = store
        self._state: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        if store is not None:
            if not all(callable(getattr(store, m, None)) for m in ("load_turns", "append_turn")):
                raise InvalidArgument(
                    f"store= takes a session store (promptimus.sessions: SQLiteSessionStore, "
                    f"PostgresSessionStore, RedisSessionStore), got {type(store).__name__}."
                )
            if name is None:
                raise InvalidSessionId(
                    "A Session with a store needs a name: its id in the store "
                    '(pm.Session("alice", store=store)).'
                )
            check_session_id(name)

    @property
    def _log(self) -> StoredConversation | None:
        """The stored conversation as this thread has read it so far: shared by every `Session`
        of that id and store (a Session per request reads only what is new), None without a
        store."""
        if self.store is None:
            return None
        return stored_conversation(self.store, self.name)  # type: ignore[arg-type]

    def state(self, owner: Any, factory: Callable[[], T], key: str | None = None) -> T:
        """This session's state for `owner`, created with `factory()` on first use.

        In a session with a store, `key` names the state in the store, and the value must be a
        `StoredState`. Inside a turn the value is the turn's own copy; outside one it is a copy
        that refuses changes (they would not be written anywhere)."""
        log = self._log
        if log is None:
            try:
                return cast(T, self._state[owner])
            except KeyError:
                value = factory()
                self._state[owner] = value
                return value
        if key is None:
            raise SessionStateError(
                f"{type(owner).__name__} keeps state in {self!r} without a key, so the store "
                "cannot keep it: pass key= (its module's path) to Session.state."
            )
        turn = _turn.get()
        if turn is not None and turn.belongs_to(log):
            return cast(T, turn.value(key, owner, factory))
        if not log.loaded:
            raise SessionStateError(
                f"{self!r} has not read its conversation from {log.store!r} yet: "
                "`await session.load()` first, or read it inside a module call."
            )
        return cast(T, log.base(key, owner, factory).fork(_changed_outside_a_turn))

    async def load(self) -> Session:
        """Catch up with the store now (a module call does it at the start of every turn)."""
        log = self._log
        if log is None:
            raise SessionStateError(f"{self!r} has no store to load from.")
        await log.refresh()
        return self

    @contextlib.asynccontextmanager
    async def turn(self) -> AsyncIterator[Session]:
        """One turn of a stored conversation, as every outermost module call in the session is:
        catch up with the store, run the body, then write everything it changed as one unit
        (nothing, if the body raises). Use it to change memories outside a module call:

            async with session.turn():
                agent.memory.add_message(Message(role="user", content="note"))
        """
        log = self._log
        if log is None:
            raise SessionStateError(f"{self!r} has no store: its state needs no turns.")
        current = _turn.get()
        if current is not None and current.belongs_to(log):
            yield self  # already inside one of this conversation's turns
            return
        turn = Turn(log)
        turn_token = _turn.set(turn)
        pending_token = _pending.set(None)
        enter_token = _stack.set((*_stack.get(), self))
        try:
            await log.refresh()
            yield self
            await log.commit(turn)
        finally:
            _stack.reset(enter_token)
            _pending.reset(pending_token)
            _turn.reset(turn_token)

    def clear(self) -> None:
        """Forget every conversation state this session holds in this process (a stored
        conversation is read again by the next turn; `await store.delete(id)` erases it)."""
        self._state.clear()
        log = self._log
        if log is not None:
            log.forget()

    def __enter__(self) -> Session:
        _stack.set((*_stack.get(), self))
        _pending.set(_pending_turn(self))
        return self

    def __exit__(self, *exc: object) -> None:
        stack = _stack.get()
        if stack and stack[-1] is self:
            stack = stack[:-1]
            _stack.set(stack)
            _pending.set(_pending_turn(stack[-1]) if stack else None)

    async def __aenter__(self) -> Session:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)

    def __repr__(self) -> str:
        if self.store is None:
            return f"Session({self.name!r})"
        return f"Session({self.name!r}, store={self.store!r})"


def _pending_turn(session: Session) -> Session | None:
    """`session` if module calls made in it now must begin a turn of its stored conversation."""
    log = session._log
    if log is None:
        return None
    turn = _turn.get()
    return None if turn is not None and turn.belongs_to(log) else session


def _changed_outside_a_turn(change: Any) -> None:
    raise SessionStateError(
        "A stored conversation changes only inside a turn, which writes the change to the store: "
        "make it in a module call, or inside `async with session.turn():`."
    )


def current_session() -> Session | None:
    stack = _stack.get()
    return stack[-1] if stack else None


async def run_in_turn(call: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
    """`await call(*args, **kwargs)` as one turn of the pending stored session (the call path
    runs the outermost module call in a stored session this way)."""
    session = _pending.get()
    if session is None:
        return await call(*args, **kwargs)
    async with session.turn():
        return await call(*args, **kwargs)


def pending_turn() -> Session | None:
    return _pending.get()
