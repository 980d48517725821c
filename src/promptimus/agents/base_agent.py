"""`BaseAgent`: the run loop the tool-calling agents share.

One run: send the conversation to the LLM, let the subclass interpret the reply (tool calls, a
final answer, or something to correct), run the tools — concurrently, results kept in request
order — and loop until a final answer or until `max_steps` LLM calls are used up.

The loop is written once, as an async generator of events: `forward` drains it without streaming,
`stream` runs it over `llm.astream` and hands its events to the caller. Both paths therefore
build the very same messages, records and memory.

Conversation state lives in `predictor` (a `MemoryModule`): per `Session`, and committed only when
a run succeeds, in one piece (request, tool loop, answer), so concurrent runs never interleave and
a failed run leaves the memory as it was.

Steering: step hooks (`register_step_hook`, see `step_hooks.py`) may change what one LLM call
sends. Tools with `requires_approval` pause a run before they execute: the loop hands back a
`RunState` (see `run_state.py`) and `run(resume=..., approvals=...)` finishes the paused step
and goes on, so a paused and resumed run sends, records and remembers what an uninterrupted one
would. Neither costs more than a falsy check when unused.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import warnings
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..core import Module, ModuleDict
from ..core.hooks import RemovableHandle
from ..dto import Message, MessageRole, Usage
from ..dto.run_record import RunRecord, StepRecord, ToolCallRecord
from ..errors import (
    ApprovalRequired,
    InvalidArgument,
    MaxIterExceeded,
    RequestRejected,
    RunStateConsumed,
    ToolError,
)
from ..llms.accumulator import MessageAccumulator
from ..modules.memory import Memory, MemoryModule, as_messages
from ..observe.provider_calls import provider_call, report_event
from ..prompts.dynamic_prompt import DynamicPrompt
from ..tools.run_context import HandoffView, RunContext
from ..tools.tool import DEFAULT_TOOL_TIMEOUT, Tool, check_timeout, tool_items, toolset
from .events import (
    AgentEvent,
    FinalResult,
    NeedsApproval,
    ReasoningDelta,
    StepEnd,
    TextDelta,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from .image_fallback import described_images, refused_images, takes_images
from .live_tools import LiveTools
from .nesting import DEFAULT_MAX_NESTING, check_max_nesting, nested_run
from .resume_ledger import claim_resume
from .run_record import capture_records, recording
from .run_result import RunResult
from .run_state import Approval, PausedCall, RunState, denial_text
from .step_hooks import StepContext, StepHook, StepPlan, plan_step
from .tool_limits import DEFAULT_MAX_TOOL_CONCURRENCY, ToolSlots, check_tool_limit

__all__ = ["Act", "BaseAgent", "Final", "LoopState", "Retry", "RunResult", "ToolInvocation"]

OutputT = TypeVar("OutputT")
_NO_USAGE = Usage()


@dataclass(slots=True)
class ToolInvocation:
    """One tool call the model asked for. `parsed` holds already-decoded arguments (ReACT)."""

    id: str | None
    name: str
    arguments: str
    parsed: dict[str, Any] | None = None


@dataclass(slots=True)
class Final:
    """The run is over: `output` is returned, `message` is kept in the conversation."""

    output: Any
    message: Message


@dataclass(slots=True)
class Act:
    """Run `calls`; `message` (the assistant's request) joins the conversation first."""

    calls: list[ToolInvocation]
    message: Message


@dataclass(slots=True)
class Retry:
    """The reply cannot be used: send `feedback` and ask again. Retries are not kept in memory.
    `counts_as_step=False` lets a separately bounded retry (structured output) not use a step."""

    feedback: Message
    counts_as_step: bool = True


Decision = Final | Act | Retry


@dataclass(slots=True)
class LoopState:
    """Per-run bookkeeping a subclass may use while interpreting replies: how many `Retry`s so
    far, the rejected outputs with their errors (for `FailedToParseOutput`), and the
    structured-output mode requests are sent in (see `StructuralOutput.mode_for`)."""

    retries: int = 0
    rejected: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    response_format: Any = None


@dataclass(slots=True)
class _End:
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class _ResumePlan:
    """A checked and claimed resume: the paused state and a decision for each pending call."""

    state: RunState
    decisions: dict[str, Approval]


def _resume_body(plan: _ResumePlan) -> Callable[..., Any]:
    """What the module call path runs for a resumed `run` (where `forward` runs otherwise)."""

    async def resumed(
        agent: BaseAgent[Any], request: Any, deps: Any = None, **prompt_vars: Any
    ) -> Any:
        return await agent._drive(request, deps, prompt_vars, plan)

    return resumed


class BaseAgent(Module, Generic[OutputT]):
    """Shared machinery of `OpenaiToolCallingAgent` and `ToolCallingAgent`.

    Submodules: `tools` (a `ModuleDict` of `Tool`s, descriptions checkpointed) and `predictor`
    (a `MemoryModule` whose `prompt` is a `Prompt`, or a `DynamicPrompt` for callable prompts).

    `tool_timeout` (seconds, None for no limit) bounds each tool call whose tool sets no
    `timeout` of its own; a call past it goes back to the model as an error (see
    `promptimus.tools.tool`). `max_nesting` bounds how deeply agent runs may nest inside each
    other, this one included (see `promptimus.agents.nesting`).

    `max_tool_concurrency` bounds this agent's tool executions in flight, across all its runs
    (None: no bound); `max_tool_calls_per_step` runs at most that many calls of one reply and
    answers the rest with an error the model reads (None: all run). See
    `promptimus.agents.tool_limits`.
    """

    def __init__(
        self,
        tools: Iterable[Tool | Module | Callable[..., Any]],
        prompt: str | Callable[..., Any],
        max_steps: int,
        memory_size: int,
        shared_memory: Memory | None,
        dynamic_suffix: str | None = None,
        tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
        max_nesting: int = DEFAULT_MAX_NESTING,
        max_tool_concurrency: int | None = DEFAULT_MAX_TOOL_CONCURRENCY,
        max_tool_calls_per_step: int | None = None,
    ) -> None:
        super().__init__()
        if max_steps < 1:
            raise InvalidArgument(f"max_steps must be >= 1, got {max_steps}.")
        self.max_steps = max_steps
        self.tool_timeout = check_timeout(tool_timeout, "tool_timeout")
        self.max_nesting = check_max_nesting(max_nesting)
        self._tool_slots = ToolSlots(check_tool_limit(max_tool_concurrency, "max_tool_concurrency"))
        self.max_tool_calls_per_step = check_tool_limit(
            max_tool_calls_per_step, "max_tool_calls_per_step"
        )
        items = tool_items(tools)
        self.tools = ModuleDict(toolset(items))
        self._live_tools = LiveTools(items, self.tools)
        self._step_hooks: dict[int, StepHook] = {}
        self._step_hook_warned: set[tuple[int, str]] = set()
        if callable(prompt):
            self.predictor = MemoryModule(memory_size, shared_memory)
            self.predictor.prompt = DynamicPrompt(prompt, suffix=dynamic_suffix)
        else:
            self.predictor = MemoryModule(memory_size, shared_memory, system_prompt=prompt)

    # ------------------------------------------------------------------ state

    @property
    def predicor(self) -> MemoryModule:
        """promptimus 0.1's misspelling of `predictor` (its tool-calling tutorial uses it)."""
        warnings.warn(
            "agent.predicor is promptimus 0.1's misspelling; use agent.predictor instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.predictor

    @property
    def max_tool_concurrency(self) -> int | None:
        """Tool executions of this agent in flight at once, across its runs (None: no bound).
        Setting it applies to tool calls that start afterwards."""
        return self._tool_slots.limit

    @max_tool_concurrency.setter
    def max_tool_concurrency(self, value: int | None) -> None:
        self._tool_slots = ToolSlots(check_tool_limit(value, "max_tool_concurrency"))

    @property
    def memory(self) -> Memory:
        """The conversation memory of the current `Session` (the agent's own outside one)."""
        return self.predictor.memory

    def tool_names(self) -> list[str]:
        return list(self.tools)

    # ------------------------------------------------------------------ subclass hooks

    def _provider_kwargs(self, state: LoopState | None = None) -> dict[str, Any]:
        """Request options for every LLM call of a run (tools, response_format...)."""
        return {}

    def _begin_run(self, llm: Any, state: LoopState) -> None:
        """Called once before a run's first LLM call (e.g. to pick the request mode)."""

    def _on_rejected(self, llm: Any, error: RequestRejected, state: LoopState) -> bool:
        """The server rejected a request (nothing was delivered). Return True after adapting
        `state` so the same step is sent again (e.g. with a weaker structured-output mode)."""
        return False

    def _on_accepted(self, llm: Any, state: LoopState) -> None:
        """The server answered a request sent as `state` describes."""

    def _variables(
        self, prompt_vars: dict[str, Any], tools: list[Tool] | None = None
    ) -> dict[str, Any]:
        """Template variables for the system prompt (`tools`: the tools offered, when a step
        hook narrowed them; None: all)."""
        return prompt_vars

    def _preamble(self, variables: dict[str, Any], state: LoopState | None = None) -> list[Message]:
        """Messages sent after the system prompt and before the conversation (not remembered)."""
        return []

    def _handoff_view(self) -> HandoffView | None:
        """How a sub-agent with `handoff_history` sees the conversation (None: the native rules
        of `handoff_messages`). A text protocol overrides it to recognize its own tool loop."""
        return None

    @abstractmethod
    def _interpret(self, reply: Message, state: LoopState) -> Decision:
        """What to do with a reply (may raise to end the run)."""

    @abstractmethod
    def _observations(
        self, calls: list[ToolInvocation], records: list[ToolCallRecord]
    ) -> list[Message]:
        """The messages that carry tool results (in request order) back to the model."""

    # ------------------------------------------------------------------ public API

    def register_step_hook(self, hook: StepHook) -> RemovableHandle:
        """Call `hook(ctx: StepContext)` (sync or async) before every LLM call of every run; it
        may return a `StepUpdate` to change that step's tools, messages, system text or template
        variables (see `promptimus.agents.step_hooks`). `.remove()` the handle to unregister."""
        if not callable(hook):
            raise InvalidArgument(f"A step hook must be callable, got {type(hook).__name__}.")
        return RemovableHandle(self._step_hooks, hook)

    async def forward(
        self,
        request: str | Message | list[Message],
        deps: Any = None,
        **prompt_vars: Any,
    ) -> OutputT:
        """Answer `request` (text, a message, or new messages), using tools as needed.

        `deps` reaches tools and dynamic prompts as `ctx.deps`; keyword arguments fill the
        system prompt template. Use `run(...)` to get the run record too, `stream(...)` for
        events as they happen. A run that pauses for tool approval cannot return an output
        here: it raises `ApprovalRequired` (use `run(...)`, which returns the paused result).
        """
        return await self._drive(request, deps, prompt_vars, None)  # type: ignore[no-any-return]

    async def run(
        self,
        request: str | Message | list[Message] | None = None,
        deps: Any = None,
        *,
        resume: RunState | None = None,
        approvals: Mapping[str, Approval] | None = None,
        **prompt_vars: Any,
    ) -> RunResult[OutputT]:
        """Like `forward` (through the same hooks), returning a `RunResult`: `status`,
        `output`, `record`, and for a run paused for approval `pending` and `state`.

        Resume a paused run with `run(resume=result.state, approvals={id: decision})` (no
        request): True runs the call, False or a reason denies it (the model is told, with the
        reason). Pass `deps` and template variables again; they are not part of the state."""
        plan = await self._resume_plan(request, resume, approvals, prompt_vars)
        with capture_records(propagate=True) as runs:
            try:
                if plan is None:
                    output = await self.forward(request, deps, **prompt_vars)  # type: ignore[arg-type]
                else:
                    output = await self._call(_resume_body(plan), (None, deps), prompt_vars)
            except ApprovalRequired as paused:
                if getattr(paused, "agent", None) is not self:
                    raise self._nested_pause(paused) from paused
                return paused.result  # type: ignore[no-any-return]
        return RunResult(output, runs[0] if runs else RunRecord(output=output))

    async def stream(
        self,
        request: str | Message | list[Message] | None = None,
        deps: Any = None,
        *,
        resume: RunState | None = None,
        approvals: Mapping[str, Approval] | None = None,
        **prompt_vars: Any,
    ) -> AsyncIterator[AgentEvent]:
        """Run with a streaming LLM, yielding typed events (see `promptimus.agents.events`);
        the last one is `FinalResult(output, record)`, or `NeedsApproval(pending, state,
        record)` when the run paused for tool approval (resume with `resume=`/`approvals=`,
        as for `run`).

        The run executes in its own task, so stopping the iteration early cancels it (the memory
        is then left unchanged). It goes through the same call path as `forward`: forward hooks
        and call interceptors see it (a pre-hook may change the arguments; an output a post-hook
        returns is the `FinalResult`'s output).
        """
        plan = await self._resume_plan(request, resume, approvals, prompt_vars)
        queue: asyncio.Queue[AgentEvent | _End] = asyncio.Queue()
        record = RunRecord()

        async def body(
            agent: BaseAgent[OutputT], request: Any, deps: Any = None, **prompt_vars: Any
        ) -> Any:
            with nested_run(agent._where(), agent.max_nesting), recording(record):
                events = agent._events(request, deps, prompt_vars, record, True, plan)
                async with contextlib.aclosing(events):
                    async for event in events:
                        if isinstance(event, NeedsApproval):
                            raise agent._paused(event)
                        if not isinstance(event, FinalResult):  # sent after the post-hooks
                            queue.put_nowait(event)
            return record.output

        async def produce() -> None:
            try:
                output = await self._call(body, (request, deps), prompt_vars)
            except ApprovalRequired as paused:
                result = paused.result
                if getattr(paused, "agent", None) is not self or result is None:
                    queue.put_nowait(_End(self._nested_pause(paused)))
                else:
                    queue.put_nowait(NeedsApproval(result.pending, result.state, result.record))
                    queue.put_nowait(_End())
            except Exception as exc:
                queue.put_nowait(_End(exc))
            else:
                queue.put_nowait(FinalResult(output, record))
                queue.put_nowait(_End())

        task = asyncio.create_task(produce())
        try:
            while True:
                item = await queue.get()
                if isinstance(item, _End):
                    if item.error is not None:
                        raise item.error
                    return
                yield item
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    # ------------------------------------------------------------------ pausing and resuming

    async def _drive(
        self,
        request: Any,
        deps: Any,
        prompt_vars: dict[str, Any],
        plan: _ResumePlan | None,
    ) -> Any:
        """Drain one run without streaming (`forward`, and `run` when resuming)."""
        record = RunRecord()
        event: AgentEvent | None = None
        with nested_run(self._where(), self.max_nesting), recording(record):
            events = self._events(request, deps, prompt_vars, record, False, plan)
            async with contextlib.aclosing(events):
                async for event in events:  # noqa: B007 - the last event tells how it ended
                    pass
        if isinstance(event, NeedsApproval):
            raise self._paused(event)
        return record.output

    def _paused(self, event: NeedsApproval) -> ApprovalRequired:
        result: RunResult[Any] = RunResult(
            None, event.record, "needs_approval", event.pending, event.state
        )
        calls = ", ".join(f"{p.tool} (id {p.id!r})" for p in event.pending)
        error = ApprovalRequired(
            f"{self._where()} paused before running {calls}: the tool asks for a person's "
            "approval. `agent(...)` cannot return an answer for a paused run; call "
            "`result = await agent.run(...)`, show `result.pending` to a person, then "
            "`await agent.run(resume=result.state, approvals={id: True | False | 'reason'})`.",
            result=result,
        )
        error.agent = self  # type: ignore[attr-defined]
        return error

    def _nested_pause(self, paused: ApprovalRequired) -> ApprovalRequired:
        """A sub-agent (run as a tool) paused: its state cannot be resumed through this run."""
        owner = getattr(paused, "agent", None)
        where = owner._where() if isinstance(owner, BaseAgent) else "a sub-agent"
        error = ApprovalRequired(
            f"{where}, called as a tool inside {self._where()}, paused for tool approval. A "
            "paused sub-agent cannot be resumed through its parent's run: give the tool that "
            "needs approval to the outer agent, or run the sub-agent yourself with "
            "`sub_agent.run(...)`.",
            result=paused.result,
        )
        error.agent = owner  # type: ignore[attr-defined]
        return error

    async def _resume_plan(
        self,
        request: Any,
        resume: RunState | None,
        approvals: Mapping[str, Approval] | None,
        prompt_vars: dict[str, Any],
    ) -> _ResumePlan | None:
        """Check a resume before anything runs, and claim the state (once only)."""
        if resume is None:
            if request is None:
                raise InvalidArgument(
                    f"{self._where()}: give a request, or resume=<a paused run's state>."
                )
            if approvals is not None:
                raise InvalidArgument(
                    f"{self._where()}: approvals= only applies with resume=<a paused run's state>."
                )
            return None
        if not isinstance(resume, RunState):
            raise InvalidArgument(
                f"resume= takes the RunState of a paused run (`result.state`, or "
                f"`RunState.from_json(text)`), got {type(resume).__name__}."
            )
        if request is not None:
            raise InvalidArgument(
                f"{self._where()}: a resumed run continues its own conversation; pass either a "
                "request or resume=, not both."
            )
        resume.check_agent(self)
        decisions = resume.decisions(approvals)
        # template variables are not saved: a missing one must fail before approved tools run
        prompt = self.predictor.prompt
        variables = self._variables(prompt_vars)
        if isinstance(prompt, DynamicPrompt):
            prompt.compose("", variables)
        else:
            prompt.render(None, **variables)
        if not await claim_resume(resume.id):
            raise RunStateConsumed(
                f"The paused run {resume.id} was already resumed; a paused run continues once "
                "(its approved tools must not run twice). Use the state of the latest result."
            )
        return _ResumePlan(resume, decisions)

    async def _finish_paused(
        self,
        plan: _ResumePlan,
        deps: Any,
        record: RunRecord,
        conversation: list[Message],
        done: list[ToolCallRecord],
    ) -> AsyncIterator[AgentEvent]:
        """Run the approved calls of the paused step, deny the others, leaving the step's
        records (in request order) in `done`."""
        saved = plan.state
        paused = record.steps[-1]
        index = paused.index
        records = list(paused.tool_calls)
        approved: list[tuple[int, ToolInvocation]] = []
        for call in saved.paused:
            decision = plan.decisions[call.approval_id]
            if decision is True:
                approved.append(
                    (
                        call.position,
                        ToolInvocation(call.call_id, call.name, call.arguments, call.parsed),
                    )
                )
                continue
            denied = ToolCallRecord(call.call_id, call.name, call.arguments, approval="denied")
            denied.server = self._server(call.name)
            denied.error = denial_text(call.name, decision)
            records[call.position] = denied
            yield self._tool_event(denied, index)
        if approved:
            tool_ctx = self._tool_context(deps, conversation, index, record)
            ran: list[ToolCallRecord] = []
            async for event in self._execute_tools([c for _, c in approved], tool_ctx, index, ran):
                yield event
            for (position, _), entry in zip(approved, ran, strict=True):
                entry.approval = "approved"
                records[position] = entry
        paused.tool_calls = records
        done.extend(records)

    async def _screen(
        self,
        calls: list[ToolInvocation],
        ctx: RunContext[Any],
        offered: list[str] | None,
        approval: bool,
    ) -> tuple[list[ToolInvocation], dict[int, ToolCallRecord], list[PausedCall]]:
        """Split a reply's calls into those to run now, those answered without running (a tool
        not offered at this step, a call waiting for approval) and the paused ones."""
        runnable: list[ToolInvocation] = []
        answered: dict[int, ToolCallRecord] = {}
        paused: list[PausedCall] = []
        ids: set[str] = set()
        for position, call in enumerate(calls):
            if offered is not None and call.name not in offered:
                names = ", ".join(offered) or "none"
                answered[position] = ToolCallRecord(
                    call.id,
                    call.name,
                    call.arguments,
                    error=f"The tool {call.name!r} is not available at this step. Available "
                    f"tools: {names}.",
                )
                continue
            tool = self.tools.get(call.name) if approval else None
            if isinstance(tool, Tool) and tool.may_need_approval:
                arguments = call.parsed if call.parsed is not None else call.arguments
                if await tool.needs_approval(arguments, ctx.for_tool_call(call.id)):
                    key = (
                        call.id if call.id and call.id not in ids else f"call_{ctx.step}_{position}"
                    )
                    ids.add(key)
                    answered[position] = ToolCallRecord(
                        call.id, call.name, call.arguments, approval="pending", server=tool.server
                    )
                    paused.append(
                        PausedCall(key, position, call.id, call.name, call.arguments, call.parsed)
                    )
                    continue
            runnable.append(call)
        return runnable, answered, paused

    # ------------------------------------------------------------------ per-step hooks

    async def _plan_step(
        self,
        index: int,
        conversation: list[Message],
        system: Message,
        deps: Any,
        record: RunRecord,
    ) -> StepPlan:
        # copies of the messages too: a hook that edits one in place (to trim it for this
        # step) must not change the run's conversation or what the memory keeps
        messages = [message.model_copy(deep=True) for message in conversation]
        ctx: StepContext[Any] = StepContext(
            index, messages, self.tool_names(), system.content, deps, record
        )
        return await plan_step(self._step_hooks, ctx, ctx.tool_names, self._step_hook_warned)

    def _step_provider_kwargs(self, kwargs: dict[str, Any], tools: list[Tool]) -> dict[str, Any]:
        """Request options for a step that offers only `tools` (a native agent narrows
        `tools`; a text protocol lists them in its prompt instead, see `_variables`)."""
        return kwargs

    # ------------------------------------------------------------------ the loop

    async def _events(
        self,
        request: str | Message | list[Message] | None,
        deps: Any,
        prompt_vars: dict[str, Any],
        record: RunRecord,
        stream: bool,
        resume: _ResumePlan | None = None,
    ) -> AsyncIterator[AgentEvent]:
        predictor = self.predictor
        memory = predictor.memory
        variables = self._variables(prompt_vars)
        prompt = predictor.prompt
        llm = prompt.llm
        state = LoopState()
        self._begin_run(llm, state)
        if resume is None:
            new = as_messages(request, predictor.new_message_role)  # type: ignore[arg-type]
            conversation = [*memory.data, *new]
            keep = list(new)  # what the memory gains if the run succeeds
            steps = 0
        else:
            saved = resume.state
            conversation, keep, steps = list(saved.conversation), list(saved.keep), saved.steps
            state.retries, state.rejected, state.errors = (
                saved.retries,
                list(saved.rejected),
                list(saved.errors),
            )
            *earlier, last = saved.record.steps
            record.steps.extend([*earlier, dataclasses.replace(last)])
            records: list[ToolCallRecord] = []
            async for event in self._finish_paused(resume, deps, record, conversation, records):
                yield event
            calls = [ToolInvocation(r.id, r.name, r.arguments) for r in records]
            observations = self._observations(calls, records)
            conversation = [*conversation, *observations]
            keep.extend(observations)
            step = record.steps[-1]
            yield StepEnd(step.index, step.reply, step.usage, record.usage)
        preamble = self._preamble(variables, state)
        provider_kwargs = self._provider_kwargs(state)
        dynamic = isinstance(prompt, DynamicPrompt)
        hooks = self._step_hooks
        approval = any(getattr(t, "may_need_approval", False) for t in self.tools.values())
        live = self._live_tools
        built_for = live.generation  # the tools the request options above describe
        while True:
            if live.sources:  # an MCP server's tools: offer its current list at every step
                await live.sync(self.tools)
                if live.generation != built_for:
                    built_for = live.generation
                    variables = self._variables(prompt_vars)
                    preamble = self._preamble(variables, state)
                    provider_kwargs = self._provider_kwargs(state)
                    approval = any(
                        getattr(t, "may_need_approval", False) for t in self.tools.values()
                    )
            if steps >= self.max_steps:
                raise MaxIterExceeded(
                    f"{self._where()} used all {self.max_steps} steps (LLM calls) without a "
                    "final answer. Raise max_steps, or check the tool results the model got "
                    "(the conversation so far is in `.messages`, the steps in the run record).",
                    messages=conversation,
                )
            index = len(record.steps)
            ctx: RunContext[Any] = RunContext(
                deps=deps, messages=conversation, step=index, usage=record.usage, record=record
            )
            instructions = ""
            demos: list[Message] = []  # a static Prompt's example turns, sent after the system text
            if dynamic:
                instructions = await prompt.instructions(ctx)  # type: ignore[union-attr]
                system = prompt.compose(instructions, variables)  # type: ignore[union-attr]
            else:
                system, *demos = prompt.render(None, **variables)  # type: ignore[union-attr]
            history = [*preamble, *conversation] if preamble else conversation
            step_vars, step_kwargs, offered, replaced = variables, provider_kwargs, None, False
            if hooks:
                plan = await self._plan_step(index, conversation, system, deps, record)
                if plan.messages is not None:
                    history = [*preamble, *plan.messages]
                active: list[Tool] | None = None
                if plan.active is not None:
                    offered = plan.active
                    active = [self.tools[name] for name in offered]  # type: ignore[misc]
                    step_kwargs = self._step_provider_kwargs(provider_kwargs, active)
                if plan.variables is not None or active is not None:
                    step_vars = self._variables({**prompt_vars, **(plan.variables or {})}, active)
                if plan.system is not None:
                    system = Message(role=system.role, content=plan.system)
                    replaced = True
                elif step_vars != variables:
                    if dynamic:
                        system = prompt.compose(instructions, step_vars)  # type: ignore[union-attr]
                    else:
                        system, *demos = prompt.render(None, **step_vars)  # type: ignore[union-attr]
            if not takes_images(llm):
                history = described_images(history)
            sent = [system, *demos, *history] if demos else [system, *history]
            accumulator = MessageAccumulator()
            try:
                if stream:
                    template = None if dynamic or replaced else prompt.prompt.value  # type: ignore[union-attr]
                    async with provider_call(
                        "llm",
                        prompt,
                        llm,
                        sent,
                        step_kwargs,
                        template=template,
                        variables=step_vars,
                        stream=True,
                    ) as call:
                        async for delta in llm.astream(sent, **step_kwargs):
                            accumulator.add(delta)
                            if delta.reasoning:
                                yield ReasoningDelta(delta.reasoning, index)
                            if delta.content:
                                yield TextDelta(delta.content, index)
                        # a stream that ended without a finish_reason was cut off: never an answer
                        reply = call.output = accumulator.finish(f"a call to {llm!r}")
                elif dynamic:
                    reply = await prompt.forward(history, step_kwargs, system=system)
                elif replaced:
                    async with provider_call(
                        "llm", prompt, llm, sent, step_kwargs, variables=step_vars
                    ) as call:
                        reply = call.output = await llm.achat(sent, **step_kwargs)
                else:
                    reply = await prompt.forward(history, step_kwargs, **step_vars)
            except RequestRejected as exc:
                if accumulator.chunks or not (
                    self._on_rejected(llm, exc, state) or refused_images(llm, sent, exc)
                ):
                    raise
                preamble = self._preamble(variables, state)
                provider_kwargs = self._provider_kwargs(state)
                continue
            self._on_accepted(llm, state)
            step = StepRecord(index, sent, reply, [], reply.usage or _NO_USAGE, offered)
            record.steps.append(step)
            steps += 1
            decision = self._interpret(reply, state)

            if isinstance(decision, Final):
                conversation.append(decision.message)
                keep.append(decision.message)
                record.output = decision.output
                memory.extend(keep)
                yield StepEnd(index, reply, step.usage, record.usage)
                yield FinalResult(decision.output, record)
                return

            if isinstance(decision, Retry):
                state.retries += 1
                report_event(
                    self,
                    "retry",
                    {"step": index, "retry": state.retries, "feedback": decision.feedback.content},
                )
                if not decision.counts_as_step:
                    steps -= 1
                conversation = [*conversation, reply, decision.feedback]
                yield StepEnd(index, reply, step.usage, record.usage)
                continue

            conversation = [*conversation, decision.message]
            keep.append(decision.message)
            calls = decision.calls
            for call in calls:
                yield ToolCallEvent(
                    call.id, call.name, call.arguments, index, self._server(call.name)
                )
            tool_ctx = self._tool_context(deps, conversation, index, record)
            records = []
            if offered is None and not approval:
                async for event in self._execute_tools(calls, tool_ctx, index, records):
                    yield event
            else:
                runnable, answered, paused = await self._screen(calls, tool_ctx, offered, approval)
                for entry in answered.values():
                    if entry.approval is None:
                        yield self._tool_event(entry, index)
                ran: list[ToolCallRecord] = []
                async for event in self._execute_tools(runnable, tool_ctx, index, ran):
                    yield event
                results = iter(ran)
                records = [
                    answered[p] if p in answered else next(results) for p in range(len(calls))
                ]
                if paused:
                    step.tool_calls = records
                    saved = RunState.new(
                        self,
                        step=index,
                        steps=steps,
                        conversation=conversation,
                        keep=keep,
                        record=record,
                        paused=paused,
                        retries=state.retries,
                        rejected=list(state.rejected),
                        errors=list(state.errors),
                    )
                    yield NeedsApproval(saved.pending, saved, record)
                    return
            step.tool_calls = records
            observations = self._observations(calls, records)
            conversation = [*conversation, *observations]
            keep.extend(observations)
            yield StepEnd(index, reply, step.usage, record.usage)

    def _tool_context(
        self, deps: Any, conversation: list[Message], index: int, record: RunRecord
    ) -> RunContext[Any]:
        """What the tools of step `index` see as `ctx` (the conversation up to their call)."""
        return RunContext(
            deps=deps,
            messages=conversation,
            step=index,
            usage=record.usage,
            record=record,
            handoff_view=self._handoff_view(),
        )

    async def _execute_tools(
        self,
        calls: list[ToolInvocation],
        ctx: RunContext[Any],
        index: int,
        records: list[ToolCallRecord],
    ) -> AsyncIterator[ToolResultEvent | ToolErrorEvent]:
        """Run one reply's tool calls concurrently (at most `max_tool_concurrency` of this
        agent's at once), yielding an event as each finishes and leaving their records in
        `records` in request order. Calls past `max_tool_calls_per_step` are not run: each gets
        an error record telling the model to make it in a later step."""
        refused: list[ToolCallRecord] = []
        cap = self.max_tool_calls_per_step
        if cap is not None and len(calls) > cap:
            refused = [self._refused(call, cap) for call in calls[cap:]]
            calls = calls[:cap]
            for entry in refused:
                yield self._tool_event(entry, index)
        slots = self._tool_slots
        semaphore = slots.for_run()
        if len(calls) == 1:
            if semaphore is None:
                records.append(await self._call_tool(calls[0], ctx))
            else:
                records.append(await slots.run(semaphore, self._call_tool, calls[0], ctx))
            yield self._tool_event(records[0], index)
        elif calls:
            tasks = [
                asyncio.ensure_future(
                    self._call_tool(c, ctx)
                    if semaphore is None
                    else slots.run(semaphore, self._call_tool, c, ctx)
                )
                for c in calls
            ]
            try:
                for finished in asyncio.as_completed(tasks):
                    yield self._tool_event(await finished, index)
            finally:
                for task in tasks:
                    task.cancel()
            records.extend(task.result() for task in tasks)
        records.extend(refused)

    @staticmethod
    def _refused(call: ToolInvocation, cap: int) -> ToolCallRecord:
        entry = ToolCallRecord(call.id, call.name, call.arguments)
        entry.error = (
            f"Not run: at most {cap} tool calls run per step (max_tool_calls_per_step) and this "
            f"one came after them. Call {call.name} again in a later step if you still need it."
        )
        return entry

    async def _call_tool(self, call: ToolInvocation, ctx: RunContext[Any]) -> ToolCallRecord:
        started = time.perf_counter()
        entry = ToolCallRecord(call.id, call.name, call.arguments)
        tool = self.tools.get(call.name)
        if not isinstance(tool, Tool):
            names = ", ".join(self.tools) or "none"
            entry.error = f"There is no tool named {call.name!r}. Available tools: {names}."
        else:
            entry.server = tool.server
            arguments = call.parsed if call.parsed is not None else call.arguments
            with capture_records() as children:
                try:
                    entry.result, entry.images = await tool.call_with_images(
                        arguments, ctx.for_tool_call(call.id), default_timeout=self.tool_timeout
                    )
                except ToolError as exc:
                    entry.error = str(exc)
            entry.children = children
        entry.duration_s = time.perf_counter() - started
        return entry

    @staticmethod
    def _tool_event(entry: ToolCallRecord, step: int) -> ToolResultEvent | ToolErrorEvent:
        if entry.error is not None:
            return ToolErrorEvent(
                entry.id, entry.name, entry.error, entry.duration_s, step, entry.server
            )
        return ToolResultEvent(
            entry.id,
            entry.name,
            entry.result or "",
            entry.duration_s,
            step,
            entry.server,
            entry.images,
        )

    def _server(self, name: str) -> str | None:
        """The server the named tool runs on (None for a local or an unknown tool)."""
        tool = self.tools.get(name)
        return tool.server if isinstance(tool, Tool) else None

    @staticmethod
    def _images_message(entry: ToolCallRecord) -> Message:
        """The images a tool call returned, as a user message: chat APIs take images only in
        user messages (an OpenAI `tool` message holds text alone)."""
        which = f"{entry.name!r} (call {entry.id})" if entry.id else repr(entry.name)
        count = "image" if len(entry.images) == 1 else f"{len(entry.images)} images"
        return Message(
            role=MessageRole.USER,
            content=f"The {count} returned by the tool call {which}:",
            images=list(entry.images),
        )

    @staticmethod
    def _result_text(entry: ToolCallRecord) -> str:
        if entry.error is not None:
            return f"Error: {entry.error}"
        return entry.result or ""

    def extra_repr(self) -> str:
        timeout = "none" if self.tool_timeout is None else f"{self.tool_timeout:g}"
        text = f"max_steps={self.max_steps}, tool_timeout={timeout}, max_nesting={self.max_nesting}"
        if self.max_tool_concurrency != DEFAULT_MAX_TOOL_CONCURRENCY:
            text += f", max_tool_concurrency={self.max_tool_concurrency}"
        if self.max_tool_calls_per_step is not None:
            text += f", max_tool_calls_per_step={self.max_tool_calls_per_step}"
        return text
