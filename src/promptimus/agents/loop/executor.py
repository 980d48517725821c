"""`RunExecutor`: how a run carries out what it does to the world — one model request, one tool
call, one guardrail check, one memory commit — and reads the memory a new run starts from.

A compaction of the conversation (when the agent has a compactor) goes through it too, as one
unit of work: its summary request is a model call the loop does not see.

The loop never does these itself: it asks `agent.executor`. A wrapper that replaces the
executor (`agent.executor = MyExecutor()`, a subclass overriding some of its methods and
calling `super()` for the work) sees each of them through one seam, and may record, replay,
refuse or hold them (`hold`: a call waits for a person's decision), without copying the loop: a
durable run makes each one a step of a workflow, so a finished step is replayed, never
repeated. Each method takes and returns plain data (messages, a `ToolInvocation`, a
`ToolCallRecord`, verdicts), which is what such a step stores.

The default carries each out directly, for one method call more than inlining them.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ...core import ModuleDict
from ...dto import Message
from ...dto.run_record import ToolCallRecord
from ...errors import ToolError
from ...guardrails.guardrail import Guardrail
from ...guardrails.screen import GuardOutcome
from ...modules.compaction import Compaction, Compactor
from ...modules.memory import Memory, replace_history
from ...prompts.base_prompt import BasePrompt
from ...tools.run_context import RunContext
from ...tools.tool import Tool
from ..run_record import capture_records
from .decisions import ToolInvocation
from .model_call import DeltaSink, ModelRequest, request_reply

__all__ = ["DEFAULT_EXECUTOR", "GuardCheck", "RunExecutor"]

GuardCheck = Callable[[], Awaitable[list[GuardOutcome]]]
"""One guardrail check, not started yet: run, it asks its guardrails in order and answers what
each decided."""


class RunExecutor:
    """Carries out a run's model requests, tool calls and memory commits (see the module
    docstring). Stateless: one instance serves every run of every agent."""

    __slots__ = ()

    holds_calls: bool = False
    """Whether `hold` may hold calls: the loop asks it about each tool call only when True."""

    async def history(self, memory: Memory) -> list[Message]:
        """The conversation a new run starts from: the messages `memory` holds now."""
        return list(memory.data)

    async def hold(
        self, tools: ModuleDict, call: ToolInvocation, ctx: RunContext[Any]
    ) -> str | None:
        """Why `call` must wait for a person's decision before it runs (the run pauses for it,
        as for a tool that `requires_approval`); None to let it run. Asked before the call runs,
        in request order, only when `holds_calls`."""
        return None

    async def call_model(
        self, prompt: BasePrompt, request: ModelRequest, on_delta: DeltaSink | None = None
    ) -> Message:
        """The model's reply to `request`, sent through `prompt` (its LLM, hooks and span);
        `on_delta` receives the pieces of a streamed reply (None: the run does not stream)."""
        return await request_reply(prompt, request, on_delta)

    async def run_tool_call(
        self,
        tools: ModuleDict,
        call: ToolInvocation,
        ctx: RunContext[Any],
        default_timeout: float | None,
    ) -> ToolCallRecord:
        """Run one tool call among `tools` (`default_timeout`: the agent's, for tools that set
        none of their own) and return its record: the result, or the error the model reads (an
        unknown tool, bad arguments, a failing tool), with its duration and the runs of the
        sub-agents it called. Errors the user must fix propagate."""
        started = time.perf_counter()
        entry = ToolCallRecord(call.id, call.name, call.arguments)
        tool = tools.get(call.name)
        if not isinstance(tool, Tool):
            names = ", ".join(tools) or "none"
            entry.error = f"There is no tool named {call.name!r}. Available tools: {names}."
        else:
            entry.server = tool.server
            arguments = call.parsed if call.parsed is not None else call.arguments
            with capture_records() as children:
                try:
                    entry.result, entry.images = await tool.call_with_images(
                        arguments,
                        ctx.for_tool_call(call.id, call.name),
                        default_timeout=default_timeout,
                    )
                except ToolError as exc:
                    entry.error = str(exc)
            entry.children = children
        entry.duration_s = time.perf_counter() - started
        return entry

    def check_guardrails(
        self, guards: Sequence[Guardrail], check: GuardCheck
    ) -> Awaitable[list[GuardOutcome]]:
        """The outcomes of one guardrail check: `check` asks `guards` in order (stopping at the
        first that ends it) about one subject (a request's user messages, a final answer, a
        tool call) and answers each one's verdict. Called where the check starts, in the order
        the checks start: a parallel input check starts before the run's first model request
        and runs beside it, so an executor that numbers what it records takes the number here,
        synchronously; the awaitable returned is then awaited for the outcomes. Asked only in
        runs of agents that have guardrails."""
        return check()

    async def compact(
        self, compactor: Compactor, messages: list[Message], llm: Any, frozen_from: int
    ) -> Compaction | None:
        """`messages` compacted by `compactor` (nothing from `frozen_from` on changes), or None
        when it had nothing to do: a call of the compactor (its span, its summary request)."""
        done: Compaction | None = await compactor(messages, llm, frozen_from)
        return done

    def keep_history(self, memory: Memory, old: list[Message], new: list[Message]) -> None:
        """Before a successful run's `commit`: the history it started from (`old`, at the end
        of `memory`) was compacted to `new`, which the memory keeps in its place (left alone if
        the memory no longer ends with `old`)."""
        replace_history(memory, old, new)

    async def commit(self, memory: Memory, messages: list[Message]) -> None:
        """Add a successful run's `messages` (request, tool loop, answer) to `memory`, in one
        piece."""
        memory.extend(messages)


DEFAULT_EXECUTOR = RunExecutor()
"""The executor every agent uses unless given another."""
