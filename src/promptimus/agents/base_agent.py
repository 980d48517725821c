"""`BaseAgent`: the agent the tool-calling agents share — construction and the public API.

One run: send the conversation to the LLM, let the subclass interpret the reply (tool calls, a
final answer, or something to correct), run the tools — concurrently, results kept in request
order — and loop until a final answer or until `max_steps` LLM calls are used up.

The loop is written once, in phases (`promptimus.agents.loop`): `forward` runs it without
streaming, `stream` with a streaming LLM, handing its events to the caller as they happen. Both
paths therefore build the very same messages, records and memory. The hooks by which a kind of
agent shapes requests and reads replies (`_interpret`, `_observations`, `_variables`, ...) are
`LoopAgent`'s; `agent.executor` carries out each model request, tool call and memory commit.

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
import warnings
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..argument_checks import non_negative_int, positive_int
from ..core import Module, ModuleDict, ModuleList
from ..core.hooks import RemovableHandle
from ..dto import Message, MessageRole
from ..dto.run_record import RunRecord, ToolCallRecord
from ..errors import (
    ApprovalRequired,
    HostedToolUnsupported,
    InvalidAgentRequest,
    InvalidArgument,
    SubAgentPaused,
)
from ..guardrails.guardrail import Guardrail
from ..guardrails.screen import checked_guardrails
from ..modules.compaction import Compactor
from ..modules.memory import Memory, MemoryModule
from ..prompts.base_prompt import BasePrompt
from ..prompts.dynamic_prompt import DynamicPrompt
from ..tools.hosted import HostedTool
from ..tools.tool import DEFAULT_TOOL_TIMEOUT, Tool, check_timeout, tool_items, toolset
from .events import AgentEvent, FinalResult, NeedsApproval
from .live_tools import LiveTools
from .loop.agent import LoopAgent
from .loop.approvals import ResumePlan, plan_resume
from .loop.decisions import Act, Decision, Final, LoopState, Retry, ToolInvocation
from .loop.pause_errors import paused_error, sub_agent_paused
from .loop.run import drive
from .nesting import DEFAULT_MAX_NESTING, check_max_nesting, nested_run
from .relay import relayed
from .run_record import capture_records, recording
from .run_result import RunResult
from .run_state import Approval, RunState, resuming_from
from .step_hooks import StepHook
from .tool_limits import DEFAULT_MAX_TOOL_CONCURRENCY, ToolSlots, check_tool_limit

__all__ = [
    "Act",
    "BaseAgent",
    "Decision",
    "Final",
    "LoopState",
    "Retry",
    "RunResult",
    "ToolInvocation",
]

OutputT = TypeVar("OutputT")


@dataclass(slots=True)
class _End:
    error: BaseException | None = None


def _resume_body(plan: ResumePlan) -> Callable[..., Any]:
    """What the module call path runs for a resumed `run` (where `forward` runs otherwise)."""

    async def resumed(
        agent: BaseAgent[Any], request: Any, deps: Any = None, **prompt_vars: Any
    ) -> Any:
        return await agent._drive(request, deps, prompt_vars, plan)

    return resumed


class BaseAgent(LoopAgent, Generic[OutputT]):
    """Shared machinery of `OpenaiToolCallingAgent` and `ToolCallingAgent`.

    Submodules: `tools` (a `ModuleDict` of `Tool`s, descriptions checkpointed) and `predictor`
    (a `MemoryModule` whose `prompt` is a `Prompt`, or a `DynamicPrompt` for callable prompts;
    a prompt module given whole, such as `pm.Prompt(...)`, is used as it is).

    `tool_timeout` (seconds, None for no limit) bounds each tool call whose tool sets no
    `timeout` of its own; a call past it goes back to the model as an error (see
    `promptimus.tools.tool`). `max_nesting` bounds how deeply agent runs may nest inside each
    other, this one included (see `promptimus.agents.nesting`).

    `max_tool_concurrency` bounds this agent's tool executions in flight, across all its runs
    (None: no bound); `max_tool_calls_per_step` runs at most that many calls of one reply and
    answers the rest with an error the model reads (None: all run). See
    `promptimus.agents.tool_limits`.

    `guardrails` (input, output and tool guardrails, see `promptimus.guardrails`) check the
    request, the final answer and each tool call; they are submodules (`agent.guardrails`).

    A `promptimus.tools.HostedTool` among `tools` (web search...) is sent as it is for the
    server to run, never run here: only an agent that sends native tools offers one, and only a
    provider that hosts tools (`OpenAIResponses`) takes it; another refuses it before any request
    (`HostedToolUnsupported`).

    `compactor` (a `promptimus.modules.Compactor`) keeps a long conversation under its trigger:
    before each step's request it compacts the history the run started from (see
    `promptimus.agents.loop.compaction`); it lives in the predictor (`predictor.compactor`).

    A kind of agent implements `_interpret` and `_observations` and may override the other
    hooks of `LoopAgent` (`promptimus.agents.loop.agent`).
    """

    _sends_hosted_tools = False
    """Whether this kind of agent sends `HostedTool`s in its requests' native ``tools``."""

    def __init__(
        self,
        tools: Iterable[Tool | Module | Callable[..., Any] | HostedTool],
        prompt: str | Callable[..., Any],
        max_steps: int,
        memory_size: int,
        shared_memory: Memory | None,
        dynamic_suffix: str | None = None,
        tool_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
        max_nesting: int = DEFAULT_MAX_NESTING,
        max_tool_concurrency: int | None = DEFAULT_MAX_TOOL_CONCURRENCY,
        max_tool_calls_per_step: int | None = None,
        guardrails: Iterable[Guardrail] | None = None,
        compactor: Compactor | None = None,
    ) -> None:
        super().__init__()
        # a step limit that NaN, inf or a string slips past bounds nothing: a paid loop
        self.max_steps = positive_int(max_steps, "max_steps")
        memory_size = non_negative_int(memory_size, "memory_size")
        self.tool_timeout = check_timeout(tool_timeout, "tool_timeout")
        self.max_nesting = check_max_nesting(max_nesting)
        self._tool_slots = ToolSlots(check_tool_limit(max_tool_concurrency, "max_tool_concurrency"))
        self.max_tool_calls_per_step = check_tool_limit(
            max_tool_calls_per_step, "max_tool_calls_per_step"
        )
        given = list(tools)
        self._hosted_tools = [tool for tool in given if isinstance(tool, HostedTool)]
        if self._hosted_tools and not self._sends_hosted_tools:
            raise HostedToolUnsupported(
                f"A {type(self).__name__} lists its tools in its prompt, so it cannot offer "
                f"the hosted tool {self._hosted_tools[0].type!r} (the server runs it): use an "
                "OpenaiToolCallingAgent on promptimus.llms.OpenAIResponses."
            )
        items = tool_items([tool for tool in given if not isinstance(tool, HostedTool)])
        self.tools = ModuleDict(toolset(items))
        self._live_tools = LiveTools(items, self.tools)
        self._step_hooks: dict[int, StepHook] = {}
        self._step_hook_warned: set[tuple[int, str]] = set()
        if isinstance(prompt, BasePrompt):  # a prompt module given whole: it is the agent's
            self.predictor = MemoryModule(memory_size, shared_memory, compactor=compactor)
            self.predictor.prompt = prompt
        elif callable(prompt):
            self.predictor = MemoryModule(memory_size, shared_memory, compactor=compactor)
            self.predictor.prompt = DynamicPrompt(prompt, suffix=dynamic_suffix)
        else:
            self.predictor = MemoryModule(
                memory_size, shared_memory, system_prompt=prompt, compactor=compactor
            )
        guards = checked_guardrails(guardrails)
        if guards:  # registered only when given: agents without them keep their checkpoint keys
            self.guardrails = ModuleList(guards)

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
        output: OutputT = await self._drive(request, deps, prompt_vars, None)
        return output

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
        plan = await plan_resume(self, request, resume, approvals, prompt_vars)
        with capture_records(propagate=True) as runs:
            try:
                if plan is None:
                    output = await self.forward(request, deps, **prompt_vars)  # type: ignore[arg-type]
                else:
                    with resuming_from(plan.state):
                        output = await self._call(_resume_body(plan), (None, deps), prompt_vars)
            except SubAgentPaused:
                raise
            except ApprovalRequired as paused:
                result = self._own_pause(paused)
                if result is None:
                    raise sub_agent_paused(self, paused, None) from paused
                return result
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
        plan = await plan_resume(self, request, resume, approvals, prompt_vars)
        queue: asyncio.Queue[AgentEvent | _End] = asyncio.Queue()
        task = asyncio.create_task(self._streamed(request, deps, prompt_vars, plan, queue))
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

    async def _streamed(
        self,
        request: Any,
        deps: Any,
        prompt_vars: dict[str, Any],
        plan: ResumePlan | None,
        queue: asyncio.Queue[AgentEvent | _End],
    ) -> None:
        """The task behind `stream`: one run through the module call path, its events put on
        `queue` as they happen, then its outcome and the end."""
        record = RunRecord()

        async def body(
            agent: BaseAgent[OutputT], request: Any, deps: Any = None, **prompt_vars: Any
        ) -> Any:
            return await agent._drive(request, deps, prompt_vars, plan, record, queue.put_nowait)

        try:
            with resuming_from(None if plan is None else plan.state):
                output = await self._call(body, (request, deps), prompt_vars)
        except SubAgentPaused as exc:
            queue.put_nowait(_End(exc))
        except ApprovalRequired as paused:
            result = self._own_pause(paused)
            if result is None or result.state is None:
                queue.put_nowait(_End(sub_agent_paused(self, paused, None)))
            else:
                queue.put_nowait(NeedsApproval(result.pending, result.state, result.record))
                queue.put_nowait(_End())
        except Exception as exc:
            queue.put_nowait(_End(exc))
        else:
            queue.put_nowait(FinalResult(output, record))
            queue.put_nowait(_End())

    # ------------------------------------------------------------------ one run

    async def _drive(
        self,
        request: Any,
        deps: Any,
        prompt_vars: dict[str, Any],
        plan: ResumePlan | None,
        record: RunRecord | None = None,
        emit: Callable[[AgentEvent], object] | None = None,
    ) -> Any:
        """One run (`forward`, a resumed `run`, `stream` with `emit`), as deep in the nesting
        of agent runs as it is, its record the current one; the output, or `ApprovalRequired`
        for a run that paused."""
        if plan is None:
            self._check_request(request)
        if record is None:
            record = RunRecord()
        emit = relayed(self.path, emit)
        with nested_run(self._where(), self.max_nesting), recording(record):
            outcome = await drive(self, request, deps, prompt_vars, record, emit, plan)
        if isinstance(outcome, NeedsApproval):
            raise paused_error(self, outcome)
        return record.output

    def _check_request(self, request: Any) -> None:
        """Refuse, before anything runs, a request that is not text, a `Message` or a list of
        them (a number, a dict of fields)."""
        if isinstance(request, str | Message):
            return
        if isinstance(request, list | tuple) and all(isinstance(m, Message) for m in request):
            return
        if isinstance(request, list | tuple):
            kinds = sorted({type(m).__name__ for m in request if not isinstance(m, Message)})
            got = f"a {type(request).__name__} holding {', '.join(kinds)}"
        else:
            got = f"{type(request).__name__} {request!r:.60}"
        raise InvalidAgentRequest(
            f"{self._where()} takes its request as text, a Message or a list of Messages; got "
            f"{got}. Pass fields as text (str(...), json.dumps(...)), or as keyword arguments "
            "that fill the system prompt's template."
        )

    def _own_pause(self, paused: ApprovalRequired) -> RunResult[Any] | None:
        """The paused result of a run of this agent, None for a pause from elsewhere."""
        result = paused.result
        if isinstance(result, RunResult) and result.state and result.state.belongs_to(self):
            return result
        return None

    # ------------------------------------------------------------------ for the kinds of agent

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
