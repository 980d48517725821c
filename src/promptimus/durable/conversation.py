"""The conversation a durable run continues: none (each run starts empty), or one kept in a
session store and named by the run (`session_id=`).

A durable run may execute in any worker and be recovered by any other, so it never reads the
memory of the process it happens to run in: the workflow runs the agent in a `Session` of its
own. A run that names a stored conversation reads it in its history step and appends itself to
it, as one turn (the same turn rules as `Session(id, store=...)`), in its commit step: the
process that executes that step writes the turn, whichever it is.

A commit step that a crash interrupted runs again when the run resumes; the turn it was
appending may or may not be in the store by then. A marker step records that the commit began,
so a resumed run that finds the marker without the commit reads the conversation first and
appends its turn only if it is not there yet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..agents.loop.executor import RunExecutor
from ..core.session import Session
from ..dto import Message
from ..modules.memory import Memory

__all__ = ["RunConversation"]


@dataclass(frozen=True, slots=True, eq=False)
class RunConversation:
    """The stored conversation one execution of a durable run reads and extends: `session`
    (its id and store), and `memory`, which gives the agent's memory in the current session."""

    session: Session
    memory: Callable[[], Memory]

    async def read(self, inner: RunExecutor) -> list[Message]:
        """The messages the run starts from: the conversation as the store holds it now."""
        async with self.session.turn():
            return await inner.history(self.memory())

    async def append(
        self,
        inner: RunExecutor,
        messages: list[Message],
        *,
        again: bool,
        compacted: tuple[list[Message], list[Message]] | None = None,
    ) -> None:
        """Append the run's `messages` as one turn; `again`: an earlier execution began this
        append and stopped, so first look whether its turn is already there. `compacted`: the
        history the run read and its compacted form, which replaces it in the same turn."""
        async with self.session.turn():
            memory = self.memory()
            if again and _holds(list(memory.data), messages):
                return
            if compacted is not None:
                inner.keep_history(memory, *compacted)
            await inner.commit(memory, messages)


def _holds(history: Sequence[Message], messages: Sequence[Message]) -> bool:
    """Whether `messages` appear in `history`, one after the other."""
    size = len(messages)
    if size == 0:
        return True
    return any(
        list(history[start : start + size]) == list(messages)
        for start in range(len(history) - size, -1, -1)
    )
