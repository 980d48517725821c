"""`DurableAgent`: an agent whose runs survive a crash, on DBOS.

    DBOS(config={"name": "support-app", "system_database_url": "sqlite:///support.sqlite"})
    durable = DurableAgent(agent, name="support")   # before DBOS.launch()
    DBOS.launch()                                    # also recovers runs a crash interrupted
    result = await durable.run("Refund order 42", workflow_id="ticket-42")

A run is a DBOS workflow named after the durable agent; its model requests, tool calls, memory
read and commit are steps (`promptimus.durable.steps`). Any process that creates the same
`DurableAgent(name=...)` before `DBOS.launch()` can execute, recover, wait for and approve its
runs. A pause for approval waits in the workflow (`promptimus.durable.pause`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import pickle
import re
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace
from typing import Any, Generic, TypeVar

from dbos import DBOS, SetWorkflowID, WorkflowHandleAsync

from ..agents.base_agent import BaseAgent
from ..agents.events import AgentEvent, FinalResult, NeedsApproval
from ..agents.run_result import RunResult
from ..agents.run_state import Approval, RunState
from ..argument_checks import finite_number, positive_int
from ..core.session import Session, check_session_id, current_session
from ..dto import Message
from ..errors import (
    DurableApprovalError,
    DurableInputMismatch,
    DurableRunNotFound,
    DurableRunStopped,
    DurableSessionError,
    DurableSetupError,
    InvalidArgument,
    InvalidSessionId,
    InvalidWorkflowId,
)
from ..protocols.session_store import SessionStore
from .conversation import RunConversation
from .engine import is_launched, registered, require_launched
from .local import listeners, watchers
from .pause import (
    APPROVAL_SEPARATOR,
    PAUSE_EVENT,
    Pause,
    decision,
    deliver,
    ensure_approval_workflow,
    is_decided,
    wait_for_decisions,
)
from .steps import DurableExecutor, Execution, executing

__all__ = ["DurableAgent"]

OutputT = TypeVar("OutputT")

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_RUNNING = ("PENDING", "ENQUEUED", "DELAYED")


class DurableAgent(Generic[OutputT]):
    """Durable runs of `agent` (either agent type) under `name` (see the module docstring).

    - `run(request, deps, workflow_id=..., **prompt_vars)`: start a run (or join the one that
      `workflow_id` already names) and return its `RunResult`: completed, or paused
      (`status == "needs_approval"`, `.pending`).
    - `stream(...)`: the same run, yielding the agent's events as they happen here.
    - `result(workflow_id)`: wait for a run started anywhere; never blocks on a paused run.
    - `approve(workflow_id, call_id, approved)`: decide one pending call, from any process.
    - `enqueue(...)`: put a run on the agent's DBOS queue, for workers (`concurrency`: at most
      that many of its runs at once across all workers; `worker_concurrency`: per worker).

    A run starts from an empty conversation, whichever worker executes it, unless it names
    one: with `store=` (a session store from `promptimus.sessions`, the same in every process),
    `run(..., session_id=...)` / `enqueue(..., session_id=...)` continue that stored
    conversation and append the run to it as one turn (see `promptimus.durable.conversation`).
    A run started inside `Session(id, store=store)` continues that conversation.

    `deps` and template variables are part of the workflow's input: DBOS stores them (pickled)
    so a recovering process can pass them again. `poll_interval` (seconds) is how often a
    process waiting for a run executing elsewhere looks at the database.
    """

    def __init__(
        self,
        agent: BaseAgent[OutputT],
        *,
        name: str,
        concurrency: int | None = None,
        worker_concurrency: int | None = None,
        poll_interval: float = 0.1,
        store: SessionStore | None = None,
    ) -> None:
        if not isinstance(agent, BaseAgent):
            raise InvalidArgument(
                "DurableAgent wraps a tool-calling agent (OpenaiToolCallingAgent or "
                f"ToolCallingAgent), got {type(agent).__name__}."
            )
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise InvalidArgument(
                "A durable agent's name names its runs in the database: 1-100 letters, digits, "
                f"'_', '.' or '-', starting with a letter or digit; got {name!r}."
            )
        if concurrency is not None:
            concurrency = positive_int(concurrency, "concurrency")
        if worker_concurrency is not None:
            worker_concurrency = positive_int(worker_concurrency, "worker_concurrency")
        poll_interval = finite_number(poll_interval, "poll_interval (seconds)", positive=True)
        if store is not None and not all(
            callable(getattr(store, method, None)) for method in ("load_turns", "append_turn")
        ):
            raise InvalidArgument(
                "store= takes a session store (promptimus.sessions: SQLiteSessionStore, "
                f"PostgresSessionStore, RedisSessionStore), got {type(store).__name__}."
            )
        if is_launched():
            raise DurableSetupError(
                f"DurableAgent(name={name!r}) was created after DBOS.launch(): DBOS recovers "
                "interrupted runs at launch, so it must know every durable agent before. "
                "Create the DurableAgent first, then call DBOS.launch()."
            )
        self.agent = agent
        self.name = name
        self.workflow_name = f"promptimus.durable.{name}"
        self.queue_name = f"promptimus-{name}"
        self.concurrency = concurrency
        self.worker_concurrency = worker_concurrency
        self.poll_interval = poll_interval
        self.store = store
        if registered(self.workflow_name):
            raise DurableSetupError(
                f"A DurableAgent named {name!r} already exists in this process; give each "
                "durable agent its own name (it names its runs in the database)."
            )
        if not isinstance(agent.executor, DurableExecutor):
            agent.executor = DurableExecutor(agent.executor)
        ensure_approval_workflow()
        durable = self

        async def durable_agent_run(
            request: Any,
            deps: Any,
            prompt_vars: dict[str, Any],
            fingerprint: str,
            session_id: str | None = None,
        ) -> RunResult[Any]:
            return await durable._workflow(request, deps, prompt_vars, session_id)

        durable_agent_run.__qualname__ = self.workflow_name
        self._run_workflow = DBOS.workflow(name=self.workflow_name)(durable_agent_run)
        self._queue: Any = None

    def __repr__(self) -> str:
        return f"DurableAgent(name={self.name!r}, agent={type(self.agent).__name__})"

    # ------------------------------------------------------------------ public API

    async def run(
        self,
        request: str | Message | list[Message],
        deps: Any = None,
        *,
        workflow_id: str | None = None,
        session_id: str | None = None,
        **prompt_vars: Any,
    ) -> RunResult[OutputT]:
        """Run `request` durably and return its `RunResult` (completed, or paused for approval).
        With the `workflow_id` of an existing run (the same input), join it instead: its result,
        waiting while it works. Another input under the same id raises `DurableInputMismatch`.
        `session_id`: the stored conversation the run continues (needs `store=`)."""
        workflow_id, task = await self._start(request, deps, workflow_id, session_id, prompt_vars)
        return await self._wait(workflow_id, task)

    async def stream(
        self,
        request: str | Message | list[Message],
        deps: Any = None,
        *,
        workflow_id: str | None = None,
        session_id: str | None = None,
        **prompt_vars: Any,
    ) -> AsyncIterator[AgentEvent]:
        """Like `run`, yielding the run's events (`promptimus.agents.events`) as this process
        executes it; the last is `FinalResult`, or `NeedsApproval` when it paused (decide with
        `approve`, then `result`). A run that executes elsewhere (joined by its id, or recovered
        by another process) yields only its outcome."""
        workflow_id = _check_workflow_id(workflow_id)
        events: asyncio.Queue[AgentEvent] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def listen(event: AgentEvent) -> None:
            loop.call_soon_threadsafe(events.put_nowait, event)

        if not listeners.add(workflow_id, listen):
            raise InvalidArgument(f"The durable run {workflow_id!r} is already streamed here.")
        waiter: asyncio.Future[RunResult[OutputT]] | None = None
        try:
            workflow_id, task = await self._start(
                request, deps, workflow_id, session_id, prompt_vars
            )
            waiter = asyncio.ensure_future(self._wait(workflow_id, task))
            while True:
                getting = asyncio.ensure_future(events.get())
                await asyncio.wait({getting, waiter}, return_when=asyncio.FIRST_COMPLETED)
                if not getting.done():
                    getting.cancel()
                    break
                event = getting.result()
                yield event
                if isinstance(event, FinalResult | NeedsApproval):
                    return
            while not events.empty():
                event = events.get_nowait()
                yield event
                if isinstance(event, FinalResult | NeedsApproval):
                    return
            result = waiter.result()
            if result.status == "completed":
                yield FinalResult(result.output, result.record)
            else:
                yield NeedsApproval(result.pending, result.state, result.record)  # type: ignore[arg-type]
        finally:
            listeners.remove(workflow_id)
            if waiter is not None and not waiter.done():
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter

    async def result(self, workflow_id: str) -> RunResult[OutputT]:
        """The `RunResult` of the run `workflow_id`, started in any process: waits while it
        works (also while it waits to be recovered), returns at once when it is completed or
        paused with calls no one has decided yet. A run that failed raises its error."""
        require_launched("DurableAgent.result")
        return await self._wait(_check_workflow_id(workflow_id), None)

    async def approve(self, workflow_id: str, call_id: str, approved: Approval = True) -> None:
        """Decide the pending call `call_id` of the paused run `workflow_id`, from any process:
        True runs it, False or a reason (text the model reads) denies it. The run goes on once
        each of its pending calls is decided. Deciding a call again the same way does nothing;
        otherwise, and for a call that is not pending, raises `DurableApprovalError`."""
        require_launched("DurableAgent.approve")
        workflow_id = _check_workflow_id(workflow_id)
        if not isinstance(approved, bool | str):
            raise InvalidArgument(
                f"approved must be True, False or a reason (text), got {type(approved).__name__}."
            )
        status = await self._status(workflow_id)
        pause = await self._pause(workflow_id)
        ids = [call.id for call in pause.pending] if pause is not None else []
        if pause is None or call_id not in ids:
            waiting = pause is not None and pause.waiting and status.status in _RUNNING
            if not waiting:
                raise DurableApprovalError(
                    f"The durable run {workflow_id!r} is not paused for approval (its workflow "
                    f"is {status.status}); there is nothing to decide."
                )
            raise DurableApprovalError(
                f"The durable run {workflow_id!r} has no pending call {call_id!r}; it waits for "
                f"{', '.join(map(repr, ids))}."
            )
        recorded: bool | str | None
        if pause.waiting and status.status in _RUNNING:
            recorded = await deliver(workflow_id, pause.round, call_id, approved)
        else:  # the run went on: only the decision it went on with may be repeated
            recorded = await decision(workflow_id, pause.round, call_id)
            if recorded is None:
                raise DurableApprovalError(
                    f"The durable run {workflow_id!r} is not paused for approval (its workflow "
                    f"is {status.status}); there is nothing to decide."
                )
        if recorded != approved:
            raise DurableApprovalError(
                f"The call {call_id!r} of the durable run {workflow_id!r} was already decided "
                f"({recorded!r}); a decision cannot be changed."
            )

    async def enqueue(
        self,
        request: str | Message | list[Message],
        deps: Any = None,
        *,
        workflow_id: str | None = None,
        session_id: str | None = None,
        **prompt_vars: Any,
    ) -> str:
        """Put a run on the agent's DBOS queue and return its workflow id: a worker process
        (any process that created this DurableAgent and launched DBOS on the same database)
        executes it. Wait for it with `result(workflow_id)`. `session_id`: as for `run`."""
        require_launched("DurableAgent.enqueue")
        if request is None:
            raise InvalidArgument("A durable run needs a request (text, a message or messages).")
        workflow_id = _check_workflow_id(workflow_id)
        session_id = self._conversation_id(session_id)
        fingerprint = _fingerprint(self.name, request, prompt_vars, session_id)
        _check_picklable(deps, prompt_vars)
        queue = await self.queue()
        arguments = (request, deps, prompt_vars, fingerprint, *_session_argument(session_id))
        with _conflicts(self, workflow_id), SetWorkflowID(workflow_id):
            await queue.enqueue_async(self._run_workflow, *arguments)
        await self._check_input(workflow_id, fingerprint)
        return workflow_id

    async def queue(self) -> Any:
        """The agent's DBOS queue (registered in the database on first use)."""
        require_launched("DurableAgent.queue")
        if self._queue is None:
            self._queue = await DBOS.register_queue_async(
                self.queue_name,
                global_concurrency=self.concurrency,
                worker_concurrency=self.worker_concurrency,
            )
        return self._queue

    # ------------------------------------------------------------------ the workflow

    async def _workflow(
        self, request: Any, deps: Any, prompt_vars: dict[str, Any], session_id: str | None
    ) -> RunResult[Any]:
        """The body of a run's workflow: the agent run, and each pause's durable wait, in a
        `Session` of the run's own (the worker's memory is no run's conversation)."""
        workflow_id: str = DBOS.workflow_id  # type: ignore[assignment]
        current = self._execution(workflow_id, session_id)
        try:
            with Session(f"durable:{workflow_id}"), executing(current):
                result = await self._attempt(workflow_id, request, deps, prompt_vars, None, None)
                round_ = 0
                while result.status == "needs_approval":
                    round_ += 1
                    pause = Pause(round_, result.pending, result.record)
                    await DBOS.set_event_async(PAUSE_EVENT, pause)
                    watchers.changed(workflow_id)
                    listener = listeners.get(workflow_id)
                    if listener is not None:  # only now may its caller decide
                        listener(NeedsApproval(result.pending, result.state, result.record))  # type: ignore[arg-type]
                    decisions = await wait_for_decisions(round_, result.pending)
                    await DBOS.set_event_async(PAUSE_EVENT, replace(pause, waiting=False))
                    result = await self._attempt(
                        workflow_id, None, deps, prompt_vars, result.state, decisions
                    )
                return RunResult(result.output, result.record)
        finally:
            watchers.changed(workflow_id)

    async def _attempt(
        self,
        workflow_id: str,
        request: Any,
        deps: Any,
        prompt_vars: dict[str, Any],
        state: RunState | None,
        decisions: dict[str, Approval] | None,
    ) -> RunResult[Any]:
        """One agent run inside the workflow (a new run, or the resume after a pause), streamed
        to this process's listener when there is one."""
        listener = listeners.get(workflow_id)
        agent = self.agent
        if listener is None:
            return await agent.run(request, deps, resume=state, approvals=decisions, **prompt_vars)
        result: RunResult[Any] | None = None
        async for event in agent.stream(
            request, deps, resume=state, approvals=decisions, **prompt_vars
        ):
            if isinstance(event, NeedsApproval):  # shown once the pause is recorded
                result = RunResult(None, event.record, "needs_approval", event.pending, event.state)
                continue
            listener(event)
            if isinstance(event, FinalResult):
                result = RunResult(event.output, event.record)
        assert result is not None  # a stream ends with its outcome or raises
        return result

    def _execution(self, workflow_id: str, session_id: str | None) -> Execution:
        if session_id is None:
            return Execution(workflow_id)
        if self.store is None:
            raise DurableSessionError(
                f"The durable run {workflow_id!r} continues the stored conversation "
                f"{session_id!r}, but this process created DurableAgent(name={self.name!r}) "
                "without store=: give it the same session store in every process."
            )
        session = Session(session_id, store=self.store)
        agent = self.agent
        return Execution(workflow_id, RunConversation(session, lambda: agent.memory))

    def _conversation_id(self, session_id: str | None) -> str | None:
        """The stored conversation a new run continues: `session_id`, else the one of the
        `Session` it is started in; None for a run that starts empty."""
        if session_id is None:
            ambient = current_session()
            if ambient is None:
                return None
            if ambient.store is None:
                raise DurableSessionError(
                    f"A durable run was started inside {ambient!r}, whose conversation lives "
                    "in this process only: a worker that executes or recovers the run could not "
                    "read it. Keep the conversation in a session store (DurableAgent(..., "
                    "store=store) and session_id=...), or start the run outside the Session."
                )
            if ambient.store is not self.store:
                raise DurableSessionError(
                    f"A durable run was started inside {ambient!r}, but "
                    f"DurableAgent(name={self.name!r}) was not given that store: pass it as "
                    "store= (the same store in every process), or pass session_id=."
                )
            return ambient.name
        if self.store is None:
            raise DurableSessionError(
                f"session_id={session_id!r} names a stored conversation, but "
                f"DurableAgent(name={self.name!r}) has no store: create it with store= (a "
                "session store from promptimus.sessions, the same in every process)."
            )
        return check_session_id(session_id)

    # ------------------------------------------------------------------ starting and waiting

    async def _start(
        self,
        request: Any,
        deps: Any,
        workflow_id: str | None,
        session_id: str | None,
        prompt_vars: dict[str, Any],
    ) -> tuple[str, asyncio.Future[Any] | None]:
        require_launched("DurableAgent.run")
        if request is None:
            raise InvalidArgument("A durable run needs a request (text, a message or messages).")
        workflow_id = _check_workflow_id(workflow_id)
        session_id = self._conversation_id(session_id)
        fingerprint = _fingerprint(self.name, request, prompt_vars, session_id)
        _check_picklable(deps, prompt_vars)
        arguments = (request, deps, prompt_vars, fingerprint, *_session_argument(session_id))
        with _conflicts(self, workflow_id), SetWorkflowID(workflow_id):
            handle = await DBOS.start_workflow_async(self._run_workflow, *arguments)
        await self._check_input(workflow_id, fingerprint)
        task = getattr(handle, "task", None)
        return workflow_id, task if isinstance(task, asyncio.Future) else None

    async def _check_input(self, workflow_id: str, fingerprint: str) -> None:
        status = await self._status(workflow_id)
        arguments: Sequence[Any] = (status.input or {}).get("args") or ()
        if len(arguments) < 4 or arguments[3] != fingerprint:
            raise DurableInputMismatch(
                f"The workflow id {workflow_id!r} already names a durable run with another "
                "input; a workflow id is one run. Use a new id for a new request, or the same "
                "request (and template variables) to join that run."
            )

    async def _status(self, workflow_id: str) -> Any:
        status = await DBOS.get_workflow_status_async(workflow_id)
        if status is None:
            raise DurableRunNotFound(
                f"There is no durable run with the workflow id {workflow_id!r}."
            )
        if status.name != self.workflow_name:
            raise (DurableInputMismatch if status.name else DurableRunNotFound)(
                f"The workflow id {workflow_id!r} names a run of {status.name!r}, not of the "
                f"durable agent {self.name!r}."
            )
        return status

    async def _pause(self, workflow_id: str) -> Pause | None:
        pause = await DBOS.get_event_async(workflow_id, PAUSE_EVENT, timeout_seconds=0)
        return pause if isinstance(pause, Pause) else None

    async def _wait(self, workflow_id: str, task: asyncio.Future[Any] | None) -> RunResult[OutputT]:
        while True:
            change = watchers.watch(workflow_id)
            try:
                if task is not None and task.done():
                    result: RunResult[OutputT] = task.result()
                    return result
                seen = await self._look(workflow_id)
                if seen is not None:
                    return seen
                waits: set[asyncio.Future[Any]] = {change}
                if task is not None:
                    waits.add(task)
                await asyncio.wait(
                    waits, timeout=self.poll_interval, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                watchers.drop(workflow_id, change)

    async def _look(self, workflow_id: str) -> RunResult[OutputT] | None:
        """The run's result if it ended or waits for a decision no one gave yet; None while it
        works."""
        status = await self._status(workflow_id)
        if status.status == "SUCCESS" or status.status == "ERROR":
            handle: WorkflowHandleAsync[RunResult[OutputT]] = await DBOS.retrieve_workflow_async(
                workflow_id
            )
            result = await handle.get_result()
            return result
        if status.status not in _RUNNING:
            raise DurableRunStopped(
                f"The durable run {workflow_id!r} ended without a result ({status.status}); "
                "start a new run (with a new workflow id) to try again."
            )
        pause = await self._pause(workflow_id)
        if pause is None or not pause.waiting:
            return None
        undecided = [
            call
            for call in pause.pending
            if not await is_decided(workflow_id, pause.round, call.id)
        ]
        if not undecided:
            return None
        return RunResult(None, pause.record, "needs_approval", undecided)  # type: ignore[arg-type]


@contextlib.contextmanager
def _conflicts(durable: DurableAgent[Any], workflow_id: str) -> Iterator[None]:
    """DBOS's refusal to start a workflow under an id that names another workflow function, as
    the named error."""
    from dbos._error import DBOSConflictingWorkflowError

    try:
        yield
    except DBOSConflictingWorkflowError:
        raise DurableInputMismatch(
            f"The workflow id {workflow_id!r} names a run of another durable agent, not of "
            f"{durable.name!r}; a workflow id is one run. Use a new id."
        ) from None


def _check_workflow_id(workflow_id: str | None) -> str:
    """`workflow_id` if it can name a run (the rules of a session id, not blank, and never the
    separator of the ids reserved for approvals), a new id for None; else `InvalidWorkflowId`."""
    if workflow_id is None:
        return uuid.uuid4().hex
    try:
        check_session_id(workflow_id)
    except InvalidSessionId as exc:
        refusal = str(exc).replace("A session id", "A durable run's workflow_id")
        raise InvalidWorkflowId(refusal) from None
    if not workflow_id.strip():
        raise InvalidWorkflowId(
            "A durable run's workflow_id must not be blank (only whitespace): name the run, "
            "e.g. after the ticket or request it handles."
        )
    if APPROVAL_SEPARATOR in workflow_id:
        raise InvalidWorkflowId(
            f"A durable run's workflow_id must not contain {APPROVAL_SEPARATOR!r}: durable runs "
            "reserve ids with it for the approvals of their pending calls. Use another id, got "
            f"{workflow_id[:100]!r}."
        )
    return workflow_id


def _session_argument(session_id: str | None) -> tuple[str, ...]:
    """The workflow's last argument: the conversation it continues (none for a run that starts
    empty, so runs recorded before conversations were named keep their input)."""
    return () if session_id is None else (session_id,)


def _fingerprint(
    name: str, request: Any, prompt_vars: dict[str, Any], session_id: str | None = None
) -> str:
    """A hash of what makes a run this run: the durable agent, the request, the variables, the
    conversation it continues."""

    def plain(value: Any) -> Any:
        if isinstance(value, Message):
            return value.model_dump(mode="json")
        if isinstance(value, list):
            return [plain(item) for item in value]
        return value

    identity = [name, plain(request), prompt_vars, *_session_argument(session_id)]
    text = json.dumps(identity, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _check_picklable(deps: Any, prompt_vars: dict[str, Any]) -> None:
    for label, value in (("deps", deps), ("the template variables", prompt_vars)):
        try:
            pickle.dumps(value)
        except Exception as exc:
            raise InvalidArgument(
                f"A durable run stores {label} in its workflow's input so a recovering process "
                f"can pass them again, and they must pickle: {type(exc).__name__}: {exc}. Pass "
                "plain data (ids, settings) and build clients inside the tools."
            ) from None
