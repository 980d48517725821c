"""`LoopAgent`: what the run loop asks of an agent — its parts and limits, and the hooks by
which a kind of agent (native tool calls, the ReACT text protocol) shapes its requests and
reads the replies. `BaseAgent` builds on it (construction and the public API)."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from ...core import Module, ModuleDict
from ...dto import Message
from ...dto.run_record import ToolCallRecord
from ...errors import RequestRejected
from ...modules.memory import MemoryModule
from ...modules.partial_output_stream import StreamedAnswer
from ...tools.run_context import HandoffView
from ...tools.tool import Tool
from ..live_tools import LiveTools
from ..run_tools import offered_tools
from ..step_hooks import StepHook
from ..tool_limits import ToolSlots
from .decisions import Decision, LoopState, ToolInvocation
from .executor import DEFAULT_EXECUTOR, RunExecutor

__all__ = ["LoopAgent"]


class LoopAgent(Module):
    """The parts, limits and hooks the run loop uses (see the module docstring).

    `executor` carries out the run's model requests, tool calls and memory commits (see
    `promptimus.agents.loop.executor`); replace it on an agent to wrap those three.
    """

    executor: RunExecutor = DEFAULT_EXECUTOR
    predictor: MemoryModule
    tools: ModuleDict
    max_steps: int
    max_nesting: int
    tool_timeout: float | None
    max_tool_calls_per_step: int | None
    _tool_slots: ToolSlots
    _live_tools: LiveTools
    _step_hooks: dict[int, StepHook]
    _step_hook_warned: set[tuple[int, str]]

    def tool_names(self) -> list[str]:
        return list(self.tools)

    def _tool(self, name: str) -> Tool | None:
        """The tool called `name` (the agent's own, else one offered to this run; see
        `promptimus.agents.run_tools`), None if there is none by that name."""
        tool = self.tools.get(name)
        if isinstance(tool, Tool):
            return tool
        return next((t for t in offered_tools(self) if t.name == name), None)

    def _all_tools(self) -> list[Tool]:
        own = [tool for tool in self.tools.values() if isinstance(tool, Tool)]
        offered = [tool for tool in offered_tools(self) if tool.name not in self.tools]
        return [*own, *offered]

    # ------------------------------------------------------------------ hooks of a kind of agent

    def _provider_kwargs(self, state: LoopState | None = None) -> dict[str, Any]:
        """Request options for every LLM call of a run (tools, response_format...)."""
        return {}

    def _step_provider_kwargs(self, kwargs: dict[str, Any], tools: list[Tool]) -> dict[str, Any]:
        """Request options for a step that offers only `tools` (a native agent narrows
        `tools`; a text protocol lists them in its prompt instead, see `_variables`)."""
        return kwargs

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

    def _partial_reader(self, state: LoopState | None = None) -> StreamedAnswer | None:
        """What reads a streamed answer into partial objects (`PartialOutput` events) when
        the agent's output is structured (`state`: the run's, for the mode it asks in); None
        otherwise."""
        return None

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
