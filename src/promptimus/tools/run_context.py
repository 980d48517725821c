"""`RunContext`: what a tool function or a dynamic system prompt may know about the run calling it.

A tool asks for it by annotating a parameter with `RunContext` (or `RunContext[MyDeps]`); the
parameter is injected by the agent and never shown to the model::

    @Tool.decorate
    async def balance(ctx: RunContext[Bank], account: str) -> float:
        return await ctx.deps.balance(account)

A long tool tells the run how far it got with `ctx.progress("Reading page 3", fraction=0.3)`: a
streamed run shows it as a `ToolProgress` event (and a served one to its front end); tracing
records it on the tool's span. While a tool call runs, `current_tool_call()` is its context, which
is how an agent the tool starts streams its own events through the calling run's stream.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, TypeVar

from ..dto import Message, Usage
from ..errors import InvalidArgument

if TYPE_CHECKING:
    from ..dto.run_record import RunRecord

__all__ = ["RunContext", "RunListener", "current_tool_call"]

DepsT = TypeVar("DepsT")

HandoffView: TypeAlias = Callable[[list[Message], bool], list[Message]]
"""`(messages, include_tool_loop) -> messages`: the conversation a handed-off sub-agent sees."""


class RunListener(Protocol):
    """What the agent run calling a tool listens to while it runs (the agent loop gives one)."""

    def progress(
        self, ctx: RunContext[Any], message: str, fraction: float | None
    ) -> None:  # pragma: no cover - a protocol
        """The tool of `ctx` reported progress."""

    def nested(
        self, ctx: RunContext[Any], path: str, event: object
    ) -> None:  # pragma: no cover - a protocol
        """An agent run started by the tool of `ctx` (the agent at `path`) produced `event`."""

    @property
    def streaming(self) -> bool:  # pragma: no cover - a protocol
        """Whether anyone streams the calling run (nested runs stream only then)."""
        ...


_current_call: ContextVar[RunContext[Any] | None] = ContextVar(
    "promptimus_current_tool_call", default=None
)


def current_tool_call() -> RunContext[Any] | None:
    """The context of the tool call the current code runs in (None outside one, or when no agent
    run listens to it)."""
    return _current_call.get()


@dataclass(slots=True)
class RunContext(Generic[DepsT]):
    """Per-run data handed to tools and dynamic prompts.

    - `deps`: whatever the caller passed as `deps=` to the agent (a DB handle, a user id, ...).
    - `messages`: the conversation so far, including the current tool loop.
    - `step`: 0-based index of the LLM call within the run.
    - `usage`: tokens used so far in this run.
    - `tool_call_id`: the id of the tool call being executed (None outside a tool call).
    - `record`: the run's `RunRecord`, when the agent keeps one.
    - `handoff_view`: how the calling agent shows `messages` to a sub-agent with
      `handoff_history` (it knows which messages are its tool loop); None: native tool calls.
    - `tool_name`: the name of the tool being executed (None outside a tool call).
    - `listener`: the calling run's `RunListener` (None outside an agent run).
    """

    deps: DepsT = None  # type: ignore[assignment]
    messages: list[Message] = field(default_factory=list)
    step: int = 0
    usage: Usage = field(default_factory=Usage)
    tool_call_id: str | None = None
    record: RunRecord | None = None
    handoff_view: HandoffView | None = None
    tool_name: str | None = None
    listener: RunListener | None = None

    def for_tool_call(
        self, tool_call_id: str | None, tool_name: str | None = None
    ) -> RunContext[DepsT]:
        """A copy for one tool call (sharing `deps`, `messages`, `usage`, `record` and the
        listener)."""
        return RunContext(
            deps=self.deps,
            messages=self.messages,
            step=self.step,
            usage=self.usage,
            tool_call_id=tool_call_id,
            record=self.record,
            handoff_view=self.handoff_view,
            tool_name=tool_name,
            listener=self.listener,
        )

    def progress(self, message: str, fraction: float | None = None) -> None:
        """Tell the calling run how far this tool call got: `message` says what it is doing,
        `fraction` how much of the work is done (0.0 to 1.0; None when it cannot tell). A
        streamed run shows it as a `ToolProgress` event; outside an agent run it does nothing.
        """
        if not isinstance(message, str):
            raise InvalidArgument(
                f"ctx.progress takes its message as text, got {type(message).__name__}."
            )
        if fraction is not None:
            if (
                isinstance(fraction, bool)
                or not isinstance(fraction, int | float)
                or not math.isfinite(fraction)
                or not 0.0 <= fraction <= 1.0
            ):
                raise InvalidArgument(
                    f"ctx.progress takes fraction as a number from 0.0 to 1.0 (or None), got "
                    f"{fraction!r}."
                )
            fraction = float(fraction)
        if self.listener is not None:
            self.listener.progress(self, message, fraction)

    def entered(self) -> object:
        """Make this the current tool call (`current_tool_call()`) until `left(token)`; a
        context that no run listens to is not made current."""
        return None if self.listener is None else _current_call.set(self)

    @staticmethod
    def left(token: object) -> None:
        if token is not None:
            _current_call.reset(token)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return (
            f"RunContext(deps={type(self.deps).__name__}, messages={len(self.messages)}, "
            f"step={self.step}, tool_call_id={self.tool_call_id!r})"
        )
