"""Running guardrails: a text through a list of them, a tool call through those that apply,
and the error a block raises. Agents and `Guarded` share these."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import GuardrailTripped, InvalidArgument, ToolError
from .guardrail import Guardrail, InputGuardrail, OutputGuardrail, ToolGuardrail
from .verdict import Verdict

__all__ = ["GuardOutcome", "Guards", "screen_arguments", "screen_text", "tripped"]


@dataclass(frozen=True, slots=True)
class GuardOutcome:
    """One guardrail's verdict on one text or call."""

    guard: Guardrail
    verdict: Verdict


@dataclass(frozen=True, slots=True)
class Guards:
    """A list of guardrails sorted by kind (the input ones split into waited-for and parallel)."""

    input: tuple[InputGuardrail, ...] = ()
    parallel: tuple[InputGuardrail, ...] = ()
    output: tuple[OutputGuardrail, ...] = ()
    tool: tuple[ToolGuardrail, ...] = ()

    @classmethod
    def of(cls, guardrails: Iterable[Any]) -> Guards:
        guards = checked_guardrails(guardrails)
        inputs = [g for g in guards if isinstance(g, InputGuardrail)]
        return cls(
            tuple(g for g in inputs if not g.parallel),
            tuple(g for g in inputs if g.parallel),
            tuple(g for g in guards if isinstance(g, OutputGuardrail)),
            tuple(g for g in guards if isinstance(g, ToolGuardrail)),
        )


def checked_guardrails(guardrails: Iterable[Any] | None) -> list[Guardrail]:
    """`guardrails` as a list, every item a guardrail (a bare function is refused with the way
    to wrap it)."""
    if guardrails is None:
        return []
    if isinstance(guardrails, Guardrail):
        return [guardrails]
    if isinstance(guardrails, str) or not isinstance(guardrails, Iterable):
        raise InvalidArgument(
            f"guardrails= takes a list of guardrails, got {type(guardrails).__name__}."
        )
    items = list(guardrails)
    for item in items:
        if not isinstance(item, Guardrail):
            raise InvalidArgument(
                f"guardrails= takes InputGuardrail, OutputGuardrail and ToolGuardrail "
                f"instances, got {type(item).__name__}: wrap a check function as "
                "InputGuardrail(check) (or OutputGuardrail / ToolGuardrail)."
            )
    return items


async def screen_text(
    guards: Sequence[Guardrail], text: str
) -> tuple[str, list[GuardOutcome], GuardOutcome | None]:
    """Run `guards` in order, each on the text as the previous ones left it: the text after
    replacements, every outcome, and the block that stopped them (None: none blocked)."""
    outcomes: list[GuardOutcome] = []
    for guard in guards:
        verdict = await guard(text)
        outcome = GuardOutcome(guard, verdict)
        outcomes.append(outcome)
        if verdict.action == "block":
            return text, outcomes, outcome
        if verdict.action == "replace" and verdict.text is not None:
            text = verdict.text
    return text, outcomes, None


def screen_arguments(tool: Any, arguments: str, parsed: dict[str, Any] | None) -> Any:
    """The arguments a tool guardrail is shown: validated against the tool's schema where it
    has one, else decoded; None when they do not validate (the call fails on its own then,
    without running)."""
    if parsed is not None:
        return parsed
    validate = getattr(tool, "validate", None)
    try:
        if callable(validate):
            return validate(arguments)
        return json.loads(arguments) if arguments.strip() else {}
    except (ToolError, ValueError):
        return None


def guard_label(guard: Guardrail) -> str:
    """How error messages name a guardrail: by its own name, never its place in a list."""
    return repr(guard.name)


def named_path(guard: Guardrail) -> str:
    """Where a guardrail sits, its last step its name (``root.guardrails.no_refunds``, as the
    board names its span), or its name alone outside a tree."""
    if not guard.path:
        return guard.name
    return f"{guard.path.rpartition('.')[0] or guard.path}.{guard.name}"


def tripped(outcome: GuardOutcome, where: str, tool: str | None = None) -> GuardrailTripped:
    guard, reason = outcome.guard, outcome.verdict.reason
    because = f": {reason}" if reason else " (it gave no reason)"
    subject = f"the call of {tool!r}" if tool else f"the {guard.kind}"
    return GuardrailTripped(
        f"{where}: the {guard.kind} guardrail {guard_label(guard)} blocked {subject}{because}. "
        "Nothing past it ran; catch GuardrailTripped to answer the user.",
        guard=named_path(guard),
        kind=guard.kind,
        reason=reason,
        tool=tool,
    )
