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
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import warnings
from abc import abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from ..core import Module, ModuleDict
from ..core.provider_calls import provider_call, report_event
from ..dto import Message, Usage
from ..errors import InvalidArgument, MaxIterExceeded, RequestRejected, ToolError
from ..llms.accumulator import MessageAccumulator
from ..modules.memory import Memory, MemoryModule, as_messages
from ..tools.run_context import HandoffView, RunContext
from ..tools.tool import DEFAULT_TOOL_TIMEOUT, Tool, check_timeout, toolset
from .dynamic_prompt import DynamicPrompt
from .events import (
    AgentEvent,
    FinalResult,
    ReasoningDelta,
    StepEnd,
    TextDelta,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from .nesting import DEFAULT_MAX_NESTING, check_max_nesting, nested_run
from .run_record import (
    RunRecord,
    StepRecord,
    ToolCallRecord,
    capture_records,
    recording,
)

__all__ = ["Act", "BaseAgent", "Final", "LoopState", "Retry", "RunResult", "ToolInvocation"]

OutputT = TypeVar("OutputT")
_NO_USAGE = Usage()


class RunResult(NamedTuple, Generic[OutputT]):
    """What `agent.run(...)` returns: the output (as `forward` would) and the run's record."""

    output: OutputT
    record: RunRecord


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


class BaseAgent(Module, Generic[OutputT]):
    """Shared machinery of `OpenaiToolCallingAgent` and `ToolCallingAgent`.

    Submodules: `tools` (a `ModuleDict` of `Tool`s, descriptions checkpointed) and `predictor`
    (a `MemoryModule` whose `prompt` is a `Prompt`, or a `DynamicPrompt` for callable prompts).

    `tool_timeout` (seconds, None for no limit) bounds each tool call whose tool sets no
    `timeout` of its own; a call past it goes back to the model as an error (see
    `promptimus.tools.tool`). `max_nesting` bounds how deeply agent runs may nest inside each
    other, this one included (see `promptimus.agents.nesting`).
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
    ) -> None:
        super().__init__()
        if max_steps < 1:
            raise InvalidArgument(f"max_steps must be >= 1, got {max_steps}.")
        self.max_steps = max_steps
        self.tool_timeout = check_timeout(tool_timeout, "tool_timeout")
        self.max_nesting = check_max_nesting(max_nesting)
        self.tools = ModuleDict(toolset(tools))
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

    def _variables(self, prompt_vars: dict[str, Any]) -> dict[str, Any]:
        """Template variables for the system prompt."""
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

    async def forward(
        self,
        request: str | Message | list[Message],
        deps: Any = None,
        **prompt_vars: Any,
    ) -> OutputT:
        """Answer `request` (text, a message, or new messages), using tools as needed.

        `deps` reaches tools and dynamic prompts as `ctx.deps`; keyword arguments fill the
        system prompt template. Use `run(...)` to get the run record too, `stream(...)` for
        events as they happen.
        """
        record = RunRecord()
        with nested_run(self._where(), self.max_nesting), recording(record):
            events = self._events(request, deps, prompt_vars, record, stream=False)
            async with contextlib.aclosing(events):
                async for _ in events:
                    pass
        return record.output  # type: ignore[no-any-return]

    async def run(
        self,
        request: str | Message | list[Message],
        deps: Any = None,
        **prompt_vars: Any,
    ) -> RunResult[OutputT]:
        """Like `forward` (through the same hooks), returning `RunResult(output, record)`."""
        with capture_records(propagate=True) as runs:
            output = await self.forward(request, deps, **prompt_vars)
        return RunResult(output, runs[0] if runs else RunRecord(output=output))

    async def stream(
        self,
        request: str | Message | list[Message],
        deps: Any = None,
        **prompt_vars: Any,
    ) -> AsyncIterator[AgentEvent]:
        """Run with a streaming LLM, yielding typed events (see `promptimus.agents.events`);
        the last one is `FinalResult(output, record)`.

        The run executes in its own task, so stopping the iteration early cancels it (the memory
        is then left unchanged). It goes through the same call path as `forward`: forward hooks
        and call interceptors see it (a pre-hook may change the arguments; an output a post-hook
        returns is the `FinalResult`'s output).
        """
        queue: asyncio.Queue[AgentEvent | _End] = asyncio.Queue()
        record = RunRecord()

        async def body(
            agent: BaseAgent[OutputT], request: Any, deps: Any = None, **prompt_vars: Any
        ) -> Any:
            with nested_run(agent._where(), agent.max_nesting), recording(record):
                events = agent._events(request, deps, prompt_vars, record, stream=True)
                async with contextlib.aclosing(events):
                    async for event in events:
                        if not isinstance(event, FinalResult):  # sent after the post-hooks
                            queue.put_nowait(event)
            return record.output

        async def produce() -> None:
            try:
                output = await self._call(body, (request, deps), prompt_vars)
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

    # ------------------------------------------------------------------ the loop

    async def _events(
        self,
        request: str | Message | list[Message],
        deps: Any,
        prompt_vars: dict[str, Any],
        record: RunRecord,
        stream: bool,
    ) -> AsyncIterator[AgentEvent]:
        predictor = self.predictor
        memory = predictor.memory
        new = as_messages(request, predictor.new_message_role)
        conversation = [*memory.data, *new]
        keep = list(new)  # what the memory gains if the run succeeds
        variables = self._variables(prompt_vars)
        prompt = predictor.prompt
        llm = prompt.llm
        state = LoopState()
        self._begin_run(llm, state)
        preamble = self._preamble(variables, state)
        provider_kwargs = self._provider_kwargs(state)
        dynamic = isinstance(prompt, DynamicPrompt)
        steps = 0
        while True:
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
            if dynamic:
                system = await prompt.system_message(ctx, **variables)  # type: ignore[union-attr]
            else:
                system = prompt.render(None, **variables)[0]  # type: ignore[union-attr]
            history = [*preamble, *conversation] if preamble else conversation
            sent = [system, *history]
            accumulator = MessageAccumulator()
            try:
                if stream:
                    template = None if dynamic else prompt.prompt.value  # type: ignore[union-attr]
                    async with provider_call(
                        "llm",
                        prompt,
                        llm,
                        sent,
                        provider_kwargs,
                        template=template,
                        variables=variables,
                        stream=True,
                    ) as call:
                        async for delta in llm.astream(sent, **provider_kwargs):
                            accumulator.add(delta)
                            if delta.reasoning:
                                yield ReasoningDelta(delta.reasoning, index)
                            if delta.content:
                                yield TextDelta(delta.content, index)
                        # a stream that ended without a finish_reason was cut off: never an answer
                        reply = call.output = accumulator.finish(f"a call to {llm!r}")
                elif dynamic:
                    reply = await prompt.forward(history, provider_kwargs, system=system)
                else:
                    reply = await prompt.forward(history, provider_kwargs, **variables)
            except RequestRejected as exc:
                if accumulator.chunks or not self._on_rejected(llm, exc, state):
                    raise
                preamble = self._preamble(variables, state)
                provider_kwargs = self._provider_kwargs(state)
                continue
            self._on_accepted(llm, state)
            step = StepRecord(index, sent, reply, [], reply.usage or _NO_USAGE)
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
                yield ToolCallEvent(call.id, call.name, call.arguments, index)
            tool_ctx: RunContext[Any] = RunContext(
                deps=deps,
                messages=conversation,
                step=index,
                usage=record.usage,
                record=record,
                handoff_view=self._handoff_view(),
            )
            records: list[ToolCallRecord] = []
            async for event in self._execute_tools(calls, tool_ctx, index, records):
                yield event
            step.tool_calls = records
            observations = self._observations(calls, records)
            conversation = [*conversation, *observations]
            keep.extend(observations)
            yield StepEnd(index, reply, step.usage, record.usage)

    async def _execute_tools(
        self,
        calls: list[ToolInvocation],
        ctx: RunContext[Any],
        index: int,
        records: list[ToolCallRecord],
    ) -> AsyncIterator[ToolResultEvent | ToolErrorEvent]:
        """Run one reply's tool calls concurrently, yielding an event as each finishes and
        leaving their records in `records` in request order."""
        if len(calls) == 1:
            records.append(await self._call_tool(calls[0], ctx))
            yield self._tool_event(records[0], index)
            return
        tasks = [asyncio.ensure_future(self._call_tool(c, ctx)) for c in calls]
        try:
            for finished in asyncio.as_completed(tasks):
                yield self._tool_event(await finished, index)
        finally:
            for task in tasks:
                task.cancel()
        records.extend(task.result() for task in tasks)

    async def _call_tool(self, call: ToolInvocation, ctx: RunContext[Any]) -> ToolCallRecord:
        started = time.perf_counter()
        entry = ToolCallRecord(call.id, call.name, call.arguments)
        tool = self.tools.get(call.name)
        if not isinstance(tool, Tool):
            names = ", ".join(self.tools) or "none"
            entry.error = f"There is no tool named {call.name!r}. Available tools: {names}."
        else:
            arguments = call.parsed if call.parsed is not None else call.arguments
            with capture_records() as children:
                try:
                    entry.result = await tool.call(
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
            return ToolErrorEvent(entry.id, entry.name, entry.error, entry.duration_s, step)
        return ToolResultEvent(entry.id, entry.name, entry.result or "", entry.duration_s, step)

    @staticmethod
    def _result_text(entry: ToolCallRecord) -> str:
        if entry.error is not None:
            return f"Error: {entry.error}"
        return entry.result or ""

    def extra_repr(self) -> str:
        timeout = "none" if self.tool_timeout is None else f"{self.tool_timeout:g}"
        return f"max_steps={self.max_steps}, tool_timeout={timeout}, max_nesting={self.max_nesting}"
