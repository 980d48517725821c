"""Per-step hooks: steer an agent run before each of its LLM calls.

    def window(ctx: StepContext) -> StepUpdate:
        return StepUpdate(messages=ctx.messages[-6:])     # a sliding window

    def after_search(ctx: StepContext) -> StepUpdate | None:
        if ctx.step == 0:
            return StepUpdate(active_tools=["search"])    # offer only `search` first
        return None

    handle = agent.register_step_hook(window)
    agent.register_step_hook(after_search)
    ...
    handle.remove()

A hook (sync or async) gets a `StepContext` and returns a `StepUpdate` or None. Hooks run in
registration order, each seeing the messages, system text and tool names the hooks before it
left; a field a later hook sets replaces what an earlier one set (`variables` merge key by key).
Nothing carries over to the next step: every step starts again from the run's real conversation,
system prompt and tools. The run record's `StepRecord.request` holds what was actually sent and
`StepRecord.tools` the tools offered (None: all of them).
"""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

from ..dto import Message, Usage
from ..errors import InvalidArgument

if TYPE_CHECKING:
    from ..dto.run_record import RunRecord

__all__ = ["StepContext", "StepHook", "StepUpdate"]

DepsT = TypeVar("DepsT")


@dataclass(slots=True)
class StepContext(Generic[DepsT]):
    """What a step hook knows before an LLM call.

    - `step`: the 0-based index of the LLM call within the run.
    - `messages`: the conversation so far (memory, the request, the tool loop), without the
      system prompt: what would be sent after it. Copies (of the list and of each message):
      edit them freely and send them through `StepUpdate(messages=...)`.
    - `tool_names`: the names of the tools that would be offered.
    - `system`: the system prompt's text for this step.
    - `deps`: the run's `deps`.
    - `record`: the run's record so far (`usage` is its token count).
    """

    step: int
    messages: list[Message]
    tool_names: list[str]
    system: str
    deps: DepsT = None  # type: ignore[assignment]
    record: RunRecord | None = field(default=None, repr=False)

    @property
    def usage(self) -> Usage:
        """Tokens used by the run so far (its sub-agents included)."""
        return self.record.usage if self.record is not None else Usage()


@dataclass(frozen=True, slots=True)
class StepUpdate:
    """Changes for one step only; a None field leaves that part as it is.

    - `active_tools`: only these tools are offered (native agents: the `tools` sent; ReACT:
      the tool list in its instructions). A call to another tool goes back to the model as an
      error. Names no tool has are ignored, with one warning per hook and name.
    - `messages`: the conversation to send in place of the real one (a sliding window, a
      summary); the run's conversation and memory are not changed.
    - `system`: the system prompt's text, replacing the rendered template outright.
    - `variables`: template variables for this step, over those the run was called with.
    """

    active_tools: Sequence[str] | None = None
    messages: Sequence[Message] | None = None
    system: str | None = None
    variables: Mapping[str, Any] | None = None


StepHook: TypeAlias = Callable[[StepContext[Any]], StepUpdate | Awaitable[StepUpdate | None] | None]


@dataclass(slots=True)
class StepPlan:
    """What the hooks decided for one step (None: unchanged)."""

    messages: list[Message] | None = None
    system: str | None = None
    variables: dict[str, Any] | None = None
    active: list[str] | None = None


def _hook_name(hook: Any) -> str:
    return getattr(hook, "__qualname__", None) or type(hook).__name__


def _checked(hook: Any, update: object) -> StepUpdate | None:
    if update is None:
        return None
    if isinstance(update, StepUpdate):
        if update.messages is not None and not isinstance(update.messages, list | tuple):
            # read an iterable once (a generator would be used up by the check below)
            update = dataclasses.replace(update, messages=list(update.messages))
        _check_fields(hook, update)
        return update
    raise InvalidArgument(
        f"The step hook {_hook_name(hook)!r} returned {type(update).__name__}; return a "
        "StepUpdate, or None to change nothing."
    )


def _check_fields(hook: Any, update: StepUpdate) -> None:
    where = f"The step hook {_hook_name(hook)!r}"
    if isinstance(update.active_tools, str):
        raise InvalidArgument(
            f"{where} set active_tools to the string {update.active_tools!r}; give a list of "
            "tool names, e.g. active_tools=['search']."
        )
    if update.messages is not None and not all(isinstance(m, Message) for m in update.messages):
        raise InvalidArgument(f"{where} set messages to something other than a list of Message.")
    if update.system is not None and not isinstance(update.system, str):
        raise InvalidArgument(f"{where} set system to {type(update.system).__name__}, not str.")
    if update.variables is not None and not isinstance(update.variables, Mapping):
        raise InvalidArgument(f"{where} set variables to {type(update.variables).__name__}.")


async def plan_step(
    hooks: Mapping[int, StepHook],
    ctx: StepContext[Any],
    known: Sequence[str],
    warned: set[tuple[int, str]],
) -> StepPlan:
    """Run `hooks` in order on `ctx` and fold their updates into one plan. `known` are the
    agent's tool names in order; `warned` remembers (hook id, name) pairs already warned about."""
    plan = StepPlan()
    for key, hook in list(hooks.items()):
        update = hook(ctx)
        if inspect.isawaitable(update):
            update = await update
        update = _checked(hook, update)
        if update is None:
            continue
        if update.active_tools is not None:
            wanted = set(update.active_tools)
            for name in sorted(wanted.difference(known)):
                if (key, name) not in warned:
                    warned.add((key, name))
                    warnings.warn(
                        f"The step hook {_hook_name(hook)!r} made {name!r} active, but the agent "
                        f"has no tool by that name (its tools: {', '.join(known) or 'none'}); "
                        "the name is ignored.",
                        UserWarning,
                        stacklevel=2,
                    )
            plan.active = [name for name in known if name in wanted]
            ctx.tool_names = list(plan.active)
        if update.messages is not None:
            plan.messages = list(update.messages)
            ctx.messages = list(plan.messages)
        if update.system is not None:
            plan.system = ctx.system = update.system
        if update.variables is not None:
            plan.variables = {**(plan.variables or {}), **update.variables}
    return plan
