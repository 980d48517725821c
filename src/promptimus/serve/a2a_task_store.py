"""The A2A tasks of a served module, kept in this process per caller, and bounded.

The a2a-sdk's in-memory store keeps every task for good; a server that answers for weeks would
grow without end. This one keeps at most `limit` tasks per caller: past it, the caller's oldest
finished tasks (completed, failed, canceled, rejected) are forgotten, and `GetTask` then says
"task not found". A task still running or waiting for input is never dropped. The conversations
themselves are in the session store, not here: forgetting a task forgets none of them.
"""

from __future__ import annotations

from collections import OrderedDict

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import Task, TaskState

__all__ = ["DEFAULT_TASKS_PER_CALLER", "CallerTaskStore"]

DEFAULT_TASKS_PER_CALLER = 1000
_FINISHED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


class CallerTaskStore(InMemoryTaskStore):
    """The SDK's in-memory store (kept per caller, by `context.user.user_name`), bounded to
    `limit` tasks per caller."""

    def __init__(self, limit: int = DEFAULT_TASKS_PER_CALLER) -> None:
        super().__init__()
        self._limit = limit
        self._order: dict[str, OrderedDict[str, None]] = {}

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        order = self._order.setdefault(context.user.user_name, OrderedDict())
        order[task.id] = None
        if len(order) > self._limit:
            await self._forget_finished(order, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        await super().delete(task_id, context)
        self._order.get(context.user.user_name, OrderedDict()).pop(task_id, None)

    async def _forget_finished(
        self, order: OrderedDict[str, None], context: ServerCallContext
    ) -> None:
        for task_id in list(order):
            if len(order) <= self._limit:
                return
            kept = await self.get(task_id, context)
            if kept is None or kept.status.state in _FINISHED:
                await self.delete(task_id, context)
                order.pop(task_id, None)
