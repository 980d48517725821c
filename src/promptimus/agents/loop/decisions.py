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
