"""Typed events an agent run yields from `agent.stream(...)`.

One step (one LLM call) yields, in order: `ReasoningDelta` / `TextDelta` pieces as the reply
streams in, one `ToolCallEvent` per tool call the reply asks for (in request order), one
`ToolResultEvent` or `ToolErrorEvent` per call as each finishes (in completion order; match them
by `id`), then `StepEnd`. The run ends with exactly one `FinalResult` — or, when the model called
a tool that needs approval, with one `NeedsApproval` (the paused step gets its `StepEnd` when the
run is resumed). The tool events' `server` names the server a remote tool runs on (an MCP
server's name), None for local tools.

    async for event in agent.stream("What is 2 + 2?"):
        match event:
            case TextDelta(text=text):
                print(text, end="")
            case ToolCallEvent(name=name, arguments=args):
                print(f"\\n-> {name}({args})")
            case FinalResult(output=output):
                answer = output
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

from ..dto import ImageContent, Message, Usage

if TYPE_CHECKING:
    from ..dto.run_record import RunRecord
    from .run_state import PendingToolCall, RunState

__all__ = [
    "AgentEvent",
    "CompactionEvent",
    "FinalResult",
    "GuardrailEvent",
    "NeedsApproval",
    "PartialOutput",
    "ReasoningDelta",
    "StepEnd",
    "SubAgentEvent",
    "TextDelta",
    "ToolCallEvent",
    "ToolErrorEvent",
    "ToolProgress",
    "ToolResultEvent",
]

OutputT = TypeVar("OutputT")


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the reply's text, as it streams in."""

    text: str
    step: int


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning (for models that expose it), as it streams in."""

    text: str
    step: int


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """The model asked for a tool call; `arguments` is exactly the text the model wrote."""

    id: str | None
    name: str
    arguments: str
    step: int
    server: str | None = None
    hosted: bool = False


@dataclass(frozen=True, slots=True)
class ToolResultEvent:
    """A tool call finished; `result` is the text the model will see, `images` the images it
    will see with it."""

    id: str | None
    name: str
    result: str
    duration_s: float
    step: int
    server: str | None = None
    images: tuple[ImageContent, ...] = ()
    hosted: bool = False


@dataclass(frozen=True, slots=True)
class ToolErrorEvent:
    """A tool call failed (bad arguments, unknown tool, the tool raised); `error` is the text
    sent back to the model so it can correct itself."""

    id: str | None
    name: str
    error: str
    duration_s: float
    step: int
    server: str | None = None


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """A running tool reported progress: `message` says what it is doing, `fraction` how much
    of its work is done (0.0 to 1.0), None when it cannot tell. `id` is its call's id."""

    id: str | None
    name: str
    message: str
    fraction: float | None
    step: int
    server: str | None = None


@dataclass(frozen=True, slots=True)
class GuardrailEvent:
    """A guardrail decided: `guard` names it (its module path), `kind` is "input", "output" or
    "tool", `action` "allow", "block" or "replace", with its `reason`; `tool_call_id` names the
    call a tool guardrail checked."""

    guard: str
    kind: str
    action: str
    reason: str | None
    step: int
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class PartialOutput(Generic[OutputT]):
    """The structured answer so far, while it streams: an instance of the output model's partial
    form (the fields that arrived and validate, in order; see
    `promptimus.modules.partial_output`). `FinalResult` carries the validated whole."""

    output: OutputT
    step: int


@dataclass(frozen=True, slots=True)
class StepEnd:
    """One LLM call and its tool calls are done. `usage` is this step's tokens, `total_usage`
    the run's so far (including sub-agents)."""

    step: int
    message: Message
    usage: Usage
    total_usage: Usage


@dataclass(frozen=True, slots=True)
class SubAgentEvent:
    """An event of an agent run nested inside this one (an agent used as a tool), as it happens.
    `path` is the sub-agent's module path (`root.researcher`), `tool_call_id` the id of this
    run's tool call that started it, `step` this run's step, and `event` the sub-agent's own
    event (a `SubAgentEvent` again for a run nested deeper). The sub-agent's `FinalResult` is
    not forwarded: its answer arrives as the tool call's `ToolResultEvent`."""

    path: str
    tool_call_id: str | None
    event: AgentEvent
    step: int


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """The conversation was compacted before step `step`'s request: `tokens_before` and
    `tokens_after` are its estimated size, `steps` the compaction steps that ran
    ("clear_tool_results", "clear_thinking", "summarize", "native"), and `usage` what the
    compaction itself cost (a summary's model call; zero for the cheap steps)."""

    step: int
    tokens_before: int
    tokens_after: int
    steps: tuple[str, ...]
    usage: Usage


@dataclass(frozen=True, slots=True)
class FinalResult(Generic[OutputT]):
    """The run's output (what `forward` returns) and its full record."""

    output: OutputT
    record: RunRecord


@dataclass(frozen=True, slots=True)
class NeedsApproval:
    """The run paused: the model called tools that need a person's approval (`pending`).
    Resume with `agent.stream(resume=state, approvals={...})` or `agent.run(...)`."""

    pending: list[PendingToolCall]
    state: RunState
    record: RunRecord


AgentEvent: TypeAlias = (
    TextDelta
    | ReasoningDelta
    | ToolCallEvent
    | ToolResultEvent
    | ToolErrorEvent
    | ToolProgress
    | GuardrailEvent
    | PartialOutput[Any]
    | StepEnd
    | SubAgentEvent
    | CompactionEvent
    | FinalResult[Any]
    | NeedsApproval
)
