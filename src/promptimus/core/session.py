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
"""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

# A stack, not a token list on the Session: one Session may be entered by many tasks at once, and
# each task's context carries its own copy of the stack.
_stack: contextvars.ContextVar[tuple[Session, ...]] = contextvars.ContextVar(
    "promptimus_sessions", default=()
)


class Session:
    """Holds per-conversation state, keyed by the object that owns it (e.g. a memory module)."""

    __slots__ = ("__weakref__", "_state", "name")

    def __init__(self, name: str | None = None) -> None:
        self.name = name
        self._state: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def state(self, owner: Any, factory: Callable[[], T]) -> T:
        """This session's state for `owner`, created with `factory()` on first use."""
        try:
            return self._state[owner]  # type: ignore[no-any-return]
        except KeyError:
            value = factory()
            self._state[owner] = value
            return value

    def clear(self) -> None:
        """Forget every conversation state this session holds."""
        self._state.clear()

    def __enter__(self) -> Session:
        _stack.set((*_stack.get(), self))
        return self

    def __exit__(self, *exc: object) -> None:
        stack = _stack.get()
        if stack and stack[-1] is self:
            _stack.set(stack[:-1])

    async def __aenter__(self) -> Session:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)

    def __repr__(self) -> str:
        return f"Session({self.name!r})"


def current_session() -> Session | None:
    stack = _stack.get()
    return stack[-1] if stack else None
