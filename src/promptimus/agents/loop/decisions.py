"""What an agent makes of a reply (`Final`, `Act`, `Retry`), the tool calls it asks for, and the
per-run bookkeeping its `_interpret` may keep (`LoopState`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...dto import Message

__all__ = ["Act", "Decision", "Final", "LoopState", "Retry", "ToolInvocation"]


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
    """Run `calls`; `message` (the assistant's request) joins the conversation first, then
    `answered`: the results of the reply's calls the agent answered itself instead of running
    them (a call of the answer tool made while other calls were pending)."""

    calls: list[ToolInvocation]
    message: Message
    answered: list[Message] = field(default_factory=list)


@dataclass(slots=True)
class Retry:
    """The reply cannot be used: send `feedback` and ask again. Retries are not kept in memory.
    `counts_as_step=False` lets a separately bounded retry (structured output) not use a step.
    `answers` go between the reply and `feedback` (results for the reply's other calls, so no
    call is left unanswered); `reply` is the reply as the conversation keeps it (None: as the
    model sent it)."""

    feedback: Message
    counts_as_step: bool = True
    answers: list[Message] = field(default_factory=list)
    reply: Message | None = None


Decision = Final | Act | Retry


@dataclass(slots=True)
class LoopState:
    """Per-run bookkeeping a subclass may use while interpreting replies: how many `Retry`s so
    far, the rejected outputs with their errors (for `FailedToParseOutput`), the
    structured-output mode requests are sent in (see `StructuralOutput.mode_for`), and the name
    of the answer tool the requests offer (None: no answer tool; see
    `promptimus.modules.answer_tool`)."""

    retries: int = 0
    rejected: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    response_format: Any = None
    answer_tool: str | None = None
