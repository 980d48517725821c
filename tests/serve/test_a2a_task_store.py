"""The A2A task store keeps a bounded number of tasks per caller: past the bound, the caller's
oldest finished tasks are forgotten, never a running one, never another caller's."""

from __future__ import annotations

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import Task, TaskState, TaskStatus

from promptimus.serve.a2a_task_store import CallerTaskStore


class Caller(User):
    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


def of(name: str) -> ServerCallContext:
    return ServerCallContext(user=Caller(name))


def task(task_id: str, state: int) -> Task:
    return Task(id=task_id, context_id="c", status=TaskStatus(state=state))  # type: ignore[arg-type]


async def test_past_the_bound_the_oldest_finished_tasks_are_forgotten() -> None:
    store = CallerTaskStore(limit=2)
    alice, bob = of("alice"), of("bob")
    await store.save(task("running", TaskState.TASK_STATE_WORKING), alice)
    await store.save(task("b1", TaskState.TASK_STATE_COMPLETED), bob)
    await store.save(task("a1", TaskState.TASK_STATE_COMPLETED), alice)
    await store.save(task("a2", TaskState.TASK_STATE_FAILED), alice)
    assert await store.get("a1", alice) is None  # the oldest finished one
    kept = await store.get("running", alice)
    assert kept is not None and kept.status.state == TaskState.TASK_STATE_WORKING
    assert await store.get("a2", alice) is not None
    assert await store.get("b1", bob) is not None  # another caller's bound is its own
    # a task saved again (a status change) is not counted twice
    await store.save(task("a2", TaskState.TASK_STATE_FAILED), alice)
    assert await store.get("running", alice) is not None
    assert await store.get("a2", alice) is not None
    assert await store.get("a2", bob) is None
