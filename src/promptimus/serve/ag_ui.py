"""The AG-UI face: `POST /ag-ui` takes a `RunAgentInput` and streams the run as AG-UI events
(server-sent events, written with `ag-ui-protocol`'s models and encoder).

The `threadId` names the conversation, scoped by the caller like the OpenAI face's (the same
store, tokens, run slots and limits): the server keeps the history and takes the user messages
after its last reply. The client's `state` reaches the tools as `ctx.deps` and comes back in a
`STATE_SNAPSHOT` (as the tools left it) before the run ends; its `context` goes before the new
messages as a message of its own.

How the agent's `stream()` events map (every event validates against the package's models):

- the run starts: `RUN_STARTED`.
- `TextDelta`: `TEXT_MESSAGE_START` (at the first piece), `TEXT_MESSAGE_CONTENT`; the message's
  `TEXT_MESSAGE_END` comes before the next kind of event.
- `ReasoningDelta`: `REASONING_START` and `REASONING_MESSAGE_START` (at the first piece),
  `REASONING_MESSAGE_CONTENT`; then `REASONING_MESSAGE_END` and `REASONING_END`.
- `ToolCallEvent`: `TOOL_CALL_START`, `TOOL_CALL_ARGS` (the whole arguments text),
  `TOOL_CALL_END`.
- `ToolResultEvent` / `ToolErrorEvent`: `TOOL_CALL_RESULT` with the text the model sees (for a
  failed call, the error text it is told).
- `ToolProgress`: `CUSTOM` named `tool_progress`, value `{toolCallId, name, message, fraction}`
  (and `server` for a remote tool): the protocol has no progress event, and `CUSTOM` is its
  extension point.
- `SubAgentEvent`: `SUBAGENT_STARTED` once per nested run (`name` and `metadata.path` the
  sub-agent's module path, `parentToolCallId` the call that started it, `parentSubagentRunId`
  for a run nested deeper), then the nested run's own text, reasoning and tool events carrying
  its `subagentRunId`; `SUBAGENT_FINISHED` when the call that started it has its result.
- `CompactionEvent`: `CUSTOM` named `compaction`, value `{step, tokensBefore, tokensAfter,
  steps}`.
- `GuardrailEvent`, `PartialOutput`, `StepEnd`: nothing. A guardrail's hold is the agent's
  stream's own: what it holds back never reaches this translation.
- `FinalResult`: the answer's text not yet streamed, as a text message of its own (structured
  output as JSON text); `STATE_SNAPSHOT` when the client sent state; `RUN_FINISHED` with
  `result` (a structured answer as JSON) and usage.
- `NeedsApproval`: `RUN_FINISHED` with an `interrupt` outcome, one `Interrupt` per call waiting
  (`reason` "tool_approval", `toolCallId`, `metadata` `{toolName, arguments}`), after the
  calls' own `TOOL_CALL_*` events.
- a failure: `RUN_ERROR` (`message`, `code`), never a traceback.

Approvals: a `resume` entry `{interruptId, status: "resolved", payload: true}` (or
`{"approved": true}`) runs the call; `payload: false`, `{"approved": false, "reason": ...}` or
`status: "cancelled"` denies it, and the model is told. Every waiting call needs an answer;
a new message on a thread with calls waiting is 409 until they are answered.

A request the server refuses before running (bad JSON, a body that is no `RunAgentInput`, an
unknown role, a tool result for a call never made, too large, no token, no free run slot) is an
HTTP 4xx or 503 whose JSON body is a `RUN_ERROR` event (`message`, `code`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    StateSnapshotEvent,
    TokenUsage,
)
from ag_ui.encoder import EventEncoder
from pydantic_core import to_jsonable_python
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..agents.base_agent import BaseAgent
from ..agents.events import FinalResult, NeedsApproval
from ..agents.run_state import RunState
from ..dto import Message, Usage
from ..errors import PromptimusError
from .ag_ui_events import Translation
from .ag_ui_input import RunInput, read_run_input
from .callers import scoped_id
from .openai_chat import run_failure
from .refusal import Refused
from .served import Served
from .served_run import ClientGone, ServedRun
from .served_text import served_text

__all__ = ["ag_ui_routes"]

log = logging.getLogger("promptimus.serve")

APPROVAL = "tool_approval"


def error_response(refused: Refused) -> JSONResponse:
    """A refusal in the protocol's own error shape: a `RUN_ERROR` event as the JSON body."""
    event = RunErrorEvent(message=refused.message, code=refused.code)
    return JSONResponse(
        event.model_dump(mode="json", by_alias=True), refused.status, headers=refused.headers
    )


@dataclass
class _Paused:
    """A run of a thread waiting for its client: the state to resume, and the calls waiting
    (approval id to the model's call id)."""

    state: RunState
    waiting: dict[str, str]


def _usage(usage: Usage) -> list[TokenUsage] | None:
    if not usage.total_tokens:
        return None
    return [
        TokenUsage(
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
        )
    ]


def _decision(status: str, payload: Any) -> bool | str:
    """A resume entry as an approval: True runs the call, False or a reason denies it."""
    if status == "cancelled":
        return False
    if isinstance(payload, bool):
        return payload
    if isinstance(payload, dict) and isinstance(payload.get("approved"), bool):
        reason = payload.get("reason")
        if not payload["approved"] and isinstance(reason, str) and reason.strip():
            return reason
        return bool(payload["approved"])
    raise Refused(
        400,
        'Answer an approval with payload true or false (or {"approved": bool, "reason": text}).',
        "invalid_resume",
    )


def _interrupts(paused: NeedsApproval) -> tuple[list[Interrupt], dict[str, str]]:
    interrupts: list[Interrupt] = []
    waiting: dict[str, str] = {}
    for call in paused.state.paused:
        waiting[call.approval_id] = call.call_id or call.approval_id
        pending = call.pending()
        interrupts.append(
            Interrupt(
                id=call.approval_id,
                reason=APPROVAL,
                message=call.reason or f"The tool {call.name!r} needs your approval to run.",
                tool_call_id=call.call_id,
                response_schema={
                    "type": "object",
                    "properties": {
                        "approved": {"type": "boolean"},
                        "reason": {"type": "string"},
                    },
                    "required": ["approved"],
                },
                metadata={"toolName": call.name, "arguments": pending.arguments},
            )
        )
    return interrupts, waiting


def ag_ui_routes(served: Served) -> list[Route]:
    paused_runs: dict[str, _Paused] = {}
    encoder = EventEncoder()

    def plan(given: RunInput, key: str) -> tuple[RunState | None, dict[str, bool | str] | None]:
        """The run to start: a new one for new messages, or the paused one the request answers."""
        paused = paused_runs.get(key)
        if paused is None:
            if given.results:
                call = next(iter(given.results))
                raise Refused(
                    400,
                    f"The tool result for {call!r} answers no call this thread is waiting for.",
                    "invalid_tool_result",
                )
            if given.resume:
                raise Refused(
                    400,
                    "resume answers an interrupt, but this thread has none waiting.",
                    "invalid_resume",
                )
            if not given.new:
                raise Refused(
                    400, "There is nothing to answer: send a user message.", "invalid_messages"
                )
            return None, None
        unknown = [i for i in given.resume if i not in paused.waiting]
        if unknown:
            raise Refused(
                400, f"resume answers the unknown interrupt {unknown[0]!r}.", "invalid_resume"
            )
        if not given.resume:
            raise Refused(
                409,
                "This thread has tool calls waiting for approval: answer them (resume) first.",
                "interrupt_pending",
            )
        missing = [i for i in paused.waiting if i not in given.resume]
        if missing:
            raise Refused(
                400,
                f"resume must answer every waiting interrupt; {missing[0]!r} has none.",
                "invalid_resume",
            )
        approvals = {i: _decision(*given.resume[i]) for i in paused.waiting}
        return paused.state, approvals

    async def run_ag_ui(request: Request) -> Response:
        try:
            user = served.caller(request)
            given = read_run_input(await served.body(request))
            session = served.session(user, given.thread_id)
            key = scoped_id(user, given.thread_id)
            resume, approvals = plan(given, key)
            served.slots.take()
        except Refused as refused:
            return error_response(refused)
        if resume is not None:
            del paused_runs[key]  # a paused run resumes once
        state = given.given.state
        request_value: Any = given.new
        if not isinstance(served.module, BaseAgent):
            request_value = given.new[-1].content if given.new else ""
        run = ServedRun(
            served.module,
            request_value,
            session,
            served.slots,
            resume=resume,
            approvals=approvals,
            deps=state,
        )
        return StreamingResponse(
            _stream(request, run, given, key),
            media_type=encoder.get_content_type(),
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    async def _stream(
        request: Request, run: ServedRun, given: RunInput, key: str
    ) -> AsyncIterator[str]:
        thread, run_id = given.thread_id, given.run_id

        def out(event: BaseEvent) -> str:
            return encoder.encode(event)

        yield out(RunStartedEvent(thread_id=thread, run_id=run_id))
        translation = Translation()
        final: FinalResult[Any] | None = None
        paused: NeedsApproval | None = None
        events = run.events(request)
        try:
            async for event in events:
                if isinstance(event, FinalResult):
                    final = event
                elif isinstance(event, NeedsApproval):
                    paused = event
                elif final is None and paused is None:
                    for translated in translation.events(event):
                        yield out(translated)
        except ClientGone:
            return
        except Exception as exc:
            for translated in translation.close():
                yield out(translated)
            refused = run_failure(exc)
            yield out(RunErrorEvent(message=refused.message, code=refused.code))
            return
        finally:
            await events.aclose()
        for translated in translation.close():
            yield out(translated)
        if paused is not None:
            interrupts, waiting = _interrupts(paused)
            paused_runs[key] = _Paused(paused.state, waiting)
            outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
            yield out(
                RunFinishedEvent(
                    thread_id=thread, run_id=run_id, outcome=outcome, usage=_usage(run.usage)
                )
            )
            return
        if final is None:
            refused = run_failure(PromptimusError("the run ended without an answer"))
            yield out(RunErrorEvent(message=refused.message, code=refused.code))
            return
        answer = served_text(final.output)
        streamed = translation.streamed_text
        if not streamed:
            missing = answer
        elif answer.startswith(streamed):
            missing = answer[len(streamed) :]
        else:
            missing = ""
        for translated in translation.answer(missing):
            yield out(translated)
        if given.given.state is not None:
            snapshot = to_jsonable_python(given.given.state, fallback=str)
            yield out(StateSnapshotEvent(snapshot=snapshot))
        result = None
        if not isinstance(final.output, str | Message):  # a structured answer, as JSON
            result = to_jsonable_python(final.output, fallback=str)
        yield out(
            RunFinishedEvent(
                thread_id=thread, run_id=run_id, result=result, usage=_usage(run.usage)
            )
        )

    return [Route("/ag-ui", run_ag_ui, methods=["POST"])]
