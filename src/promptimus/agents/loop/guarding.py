"""Guardrails in a run: the request's user messages through the input guardrails (waited for,
or raced against the first model request), the final answer through the output guardrails
(blocked answers sent back while a guardrail's `retry` allows), and each tool call through the
tool guardrails before it runs. Each check is made through the agent's executor
(`check_guardrails`: a durable run records its verdicts), and every verdict joins the run record
and the stream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ...core.hooks import revise_call_input
from ...dto import Message, MessageRole
from ...dto.run_record import GuardrailRecord, ToolCallRecord
from ...errors import InvalidVerdict
from ...guardrails.guardrail import Guardrail, ToolGuardrail
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
    "InputCheck",
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
    if not guards or not any(message.role == MessageRole.USER for message in new):
        return new
    return _screened(run, guards, new, await _request_check(run, guards, new))


@dataclass(frozen=True, slots=True)
class InputCheck:
    """The parallel input guardrails (`guards`) on a request, checking beside the first model
    request (`task`: what each decided)."""

    guards: Sequence[Guardrail]
    task: asyncio.Future[list[GuardOutcome]]


def start_input_check(
    run: ActiveRun, guards: Sequence[Guardrail], new: list[Message]
) -> InputCheck | None:
    """The parallel input guardrails, started beside the first model request (None: the
    request has no user message to check)."""
    if not any(message.role == MessageRole.USER for message in new):
        return None
    return InputCheck(guards, asyncio.ensure_future(_request_check(run, guards, new)))


def _request_check(
    run: ActiveRun, guards: Sequence[Guardrail], new: list[Message]
) -> Awaitable[list[GuardOutcome]]:
    """The check of the user messages of `new` (one check, through the executor)."""
    texts = [message.content for message in new if message.role == MessageRole.USER]
    return run.agent.executor.check_guardrails(guards, partial(_screen_texts, guards, texts))


async def _screen_texts(guards: Sequence[Guardrail], texts: list[str]) -> list[GuardOutcome]:
    """Each text through `guards` in turn, until one is blocked: every outcome."""
    outcomes: list[GuardOutcome] = []
    for text in texts:
        _, found, blocked = await screen_text(guards, text)
        outcomes.extend(found)
        if blocked is not None:
            break
    return outcomes


def _screened(
    run: ActiveRun,
    guards: Sequence[Guardrail],
    new: list[Message],
    outcomes: Sequence[GuardOutcome],
) -> list[Message]:
    """`new` as the check's `outcomes` leave it (each user message's, in turn, one per guard
    until a block): the verdicts join the run; a block raises."""
    _note(run, outcomes, len(run.record.steps), None)
    screened: list[Message] = []
    start = 0
    stopped: GuardOutcome | None = None
    for message in new:
        if message.role != MessageRole.USER or stopped is not None:
            screened.append(message)
            continue
        own = outcomes[start : start + len(guards)]
        start += len(guards)
        text, stopped = _decided(own, message.content)
        changed = text != message.content
        screened.append(message.model_copy(update={"content": text}) if changed else message)
    if any(a is not b for a, b in zip(screened, new, strict=True)):
        _record_request(run, screened)  # what was redacted is recorded nowhere, blocked or not
    if stopped is not None:
        raise tripped(stopped, run.agent._where())
    return screened


def _record_request(run: ActiveRun, screened: list[Message]) -> None:
    """Record the run's call (its trace span, the board's run) as given the request the input
    guardrails left, in the form it was given in (a text, a message, a list of messages)."""
    request: Any = screened
    if isinstance(run.request, str) and len(screened) == 1:
        request = screened[0].content
    elif isinstance(run.request, Message) and len(screened) == 1:
        request = screened[0]
    revise_call_input(run.agent, (request, run.deps), dict(run.prompt_vars))


def _decided(outcomes: Sequence[GuardOutcome], text: str) -> tuple[str, GuardOutcome | None]:
    """`text` after the replacements among `outcomes`, and the block that ended them if one
    did (as `screen_text` answers)."""
    for outcome in outcomes:
        verdict = outcome.verdict
        if verdict.action == "block":
            return text, outcome
        if verdict.action == "replace" and verdict.text is not None:
            text = verdict.text
    return text, None


def drop_input_check(check: InputCheck | None) -> None:
    """Let go of a parallel input check the run will not race (it failed before its first
    model request): a running check is cancelled, so no guard outlives its run, and a finished
    one's error is read, so it is not reported as never retrieved."""
    if check is None:
        return
    task = check.task
    if not task.done():
        task.cancel()
    elif not task.cancelled():
        task.exception()


async def race_input_check(
    run: ActiveRun,
    check: InputCheck,
    new: list[Message],
    call: Callable[[], Awaitable[Message | None]],
    allowed: Callable[[], object] | None = None,
) -> Message | object | None:
    """The first model request (`call`) beside the parallel input check: a block cancels the
    request and raises; a replacement cancels it, puts the replaced messages in the run and
    answers `REPLACED`; an allow lets the reply through (only then may its tool calls run, and
    `allowed` is called, to show a stream what of the reply it held)."""
    model = asyncio.ensure_future(call())
    both: set[asyncio.Future[Any]] = {model, check.task}
    try:
        await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
        screened = _screened(run, check.guards, new, await check.task)
    except BaseException:
        for task in (model, check.task):
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
    if allowed is not None:
        allowed()
    return await model


async def screen_output(
    run: ActiveRun, guards: Sequence[Guardrail], index: int, decision: Final
) -> Final | Retry:
    """The final answer through the output guardrails: as it is, replaced, or sent back for
    another try (a block while its guardrail's `retry` allows); a block past that raises."""
    original = decision.message.content
    outcomes = await run.agent.executor.check_guardrails(
        guards, partial(_screen_answer, guards, original)
    )
    _note(run, outcomes, index, None)
    text, blocked = _decided(outcomes, original)
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
    outcomes = await run.agent.executor.check_guardrails(
        applicable, partial(_screen_call, applicable, call.name, arguments)
    )
    _note(run, outcomes, index, call.id)
    if not outcomes or outcomes[-1].verdict.action == "allow":
        return None
    ended = outcomes[-1]
    guard, verdict = ended.guard, ended.verdict
    if verdict.action == "block":
        if verdict.stop:
            raise tripped(ended, run.agent._where(), call.name)
        entry = ToolCallRecord(call.id, call.name, call.arguments)
        reason = f": {verdict.reason}" if verdict.reason else "."
        entry.error = f"Not run: the guardrail {guard_label(guard)} refused this call{reason}"
        return entry
    return ToolCallRecord(call.id, call.name, call.arguments, result=verdict.text)


async def _screen_answer(guards: Sequence[Guardrail], text: str) -> list[GuardOutcome]:
    _, outcomes, _ = await screen_text(guards, text)
    return outcomes


async def _screen_call(
    guards: Sequence[ToolGuardrail], name: str, arguments: Any
) -> list[GuardOutcome]:
    """The call through `guards` in turn, until one blocks or answers it: every outcome."""
    outcomes: list[GuardOutcome] = []
    for guard in guards:
        verdict = await guard(name, arguments)
        outcomes.append(GuardOutcome(guard, verdict))
        if verdict.action != "allow":
            break
    return outcomes
