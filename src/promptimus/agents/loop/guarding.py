"""Guardrails in a run: the request's user messages through the input guardrails (waited for,
or raced against the first model request), the final answer through the output guardrails
(blocked answers sent back while a guardrail's `retry` allows), and each tool call through the
tool guardrails before it runs. Every verdict joins the run record and the stream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ...dto import Message, MessageRole
from ...dto.run_record import GuardrailRecord, ToolCallRecord
from ...errors import InvalidVerdict
from ...guardrails.guardrail import Guardrail
from ...guardrails.screen import (
    GuardOutcome,
    Guards,
    guard_label,
    screen_arguments,
    screen_text,
    tripped,
)
from ..events import GuardrailEvent
from .active_run import ActiveRun
from .agent import LoopAgent
from .decisions import Final, Retry, ToolInvocation

__all__ = [
    "drop_input_check",
    "guards_of",
    "race_input_check",
    "screen_output",
    "screen_request",
    "screen_tool_call",
    "start_input_check",
]

REPLACED = object()
"""`race_input_check`'s answer when a parallel guardrail replaced the request: send again."""


def guards_of(agent: LoopAgent) -> Guards | None:
    """The agent's guardrails by kind; None when it has none (the common, free case)."""
    guardrails = agent._submodules.get("guardrails")
    return None if guardrails is None else Guards.of(guardrails.children())


def _note(run: ActiveRun, outcomes: Sequence[GuardOutcome], step: int, call: str | None) -> None:
    for outcome in outcomes:
        guard, verdict = outcome.guard, outcome.verdict
        name = guard.path or guard.name
        run.record.guardrails.append(
            GuardrailRecord(name, guard.kind, verdict.action, verdict.reason, step, call)
        )
        if run.emit is not None:
            run.emit(GuardrailEvent(name, guard.kind, verdict.action, verdict.reason, step, call))


async def screen_request(
    run: ActiveRun, guards: Sequence[Guardrail], new: list[Message]
) -> list[Message]:
    """`new` (a request's messages) with each user message through `guards`; a block raises."""
    screened: list[Message] = []
    for message in new:
        if message.role != MessageRole.USER or not guards:
            screened.append(message)
            continue
        text, outcomes, blocked = await screen_text(guards, message.content)
        _note(run, outcomes, len(run.record.steps), None)
        if blocked is not None:
            raise tripped(blocked, run.agent._where())
        changed = text != message.content
        screened.append(message.model_copy(update={"content": text}) if changed else message)
    return screened


def start_input_check(
    run: ActiveRun, guards: Sequence[Guardrail], new: list[Message]
) -> asyncio.Task[list[Message]]:
    """The parallel input guardrails, started beside the first model request."""
    return asyncio.ensure_future(screen_request(run, guards, new))


def drop_input_check(check: asyncio.Task[Any] | None) -> None:
    """Let go of a parallel input check the run will not race (it failed before its first
    model request): a running check is cancelled, so no guard outlives its run, and a finished
    one's error is read, so it is not reported as never retrieved."""
    if check is None:
        return
    if not check.done():
        check.cancel()
    elif not check.cancelled():
        check.exception()


async def race_input_check(
    run: ActiveRun,
    check: asyncio.Task[list[Message]],
    new: list[Message],
    call: Callable[[], Awaitable[Message | None]],
) -> Message | object | None:
    """The first model request (`call`) beside the parallel input check: a block cancels the
    request and raises; a replacement cancels it, puts the replaced messages in the run and
    answers `REPLACED`; an allow lets the reply through (only then may its tool calls run)."""
    model = asyncio.ensure_future(call())
    try:
        await asyncio.wait({model, check}, return_when=asyncio.FIRST_COMPLETED)
        screened = await check
    except BaseException:
        for task in (model, check):
            task.cancel()
        with contextlib.suppress(BaseException):
            await model
        raise
    if any(a is not b for a, b in zip(screened, new, strict=True)):
        model.cancel()
        with contextlib.suppress(BaseException):
            await model
        run.conversation = [*run.conversation[: len(run.conversation) - len(new)], *screened]
        run.keep = [*screened, *run.keep[len(new) :]]
        return REPLACED
    return await model


async def screen_output(
    run: ActiveRun, guards: Sequence[Guardrail], index: int, decision: Final
) -> Final | Retry:
    """The final answer through the output guardrails: as it is, replaced, or sent back for
    another try (a block while its guardrail's `retry` allows); a block past that raises."""
    original = decision.message.content
    text, outcomes, blocked = await screen_text(guards, original)
    _note(run, outcomes, index, None)
    if blocked is not None:
        guard = blocked.guard
        used = run.guard_retries.get(id(guard), 0)
        if used >= getattr(guard, "retry", 0):
            raise tripped(blocked, run.agent._where())
        run.guard_retries[id(guard)] = used + 1
        reason = f": {blocked.verdict.reason}" if blocked.verdict.reason else ""
        feedback = (
            f"Your answer was blocked by the guardrail {guard_label(guard)}{reason}. Answer "
            "again in a way that satisfies it."
        )
        return Retry(Message(role=MessageRole.USER, content=feedback))
    if text == original:
        return decision
    replaced = decision.message.model_copy(update={"content": text})
    again = run.agent._interpret(replaced, run.state)
    if not isinstance(again, Final):
        raise InvalidVerdict(
            f"{run.agent._where()}: an output guardrail replaced the answer with text that is "
            "no longer a final answer (it does not validate as the agent's output)."
        )
    return again


async def screen_tool_call(
    run: ActiveRun, guards: Sequence[Any], call: ToolInvocation, index: int
) -> ToolCallRecord | None:
    """The record of a call the tool guardrails refused or answered (it does not run), None to
    run it; a block with `stop=True` raises."""
    applicable = [guard for guard in guards if guard.applies_to(call.name)]
    if not applicable:
        return None
    arguments = screen_arguments(run.agent._tool(call.name), call.arguments, call.parsed)
    if arguments is None:
        return None  # arguments that do not validate: the call fails without running
    for guard in applicable:
        verdict = await guard(call.name, arguments)
        _note(run, [GuardOutcome(guard, verdict)], index, call.id)
        if verdict.action == "block":
            if verdict.stop:
                raise tripped(GuardOutcome(guard, verdict), run.agent._where(), call.name)
            entry = ToolCallRecord(call.id, call.name, call.arguments)
            reason = f": {verdict.reason}" if verdict.reason else "."
            entry.error = f"Not run: the guardrail {guard_label(guard)} refused this call{reason}"
            return entry
        if verdict.action == "replace":
            return ToolCallRecord(call.id, call.name, call.arguments, result=verdict.text)
    return None
