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

Front-end tools: the tools the request declares are offered to the model beside the module's
own (`promptimus.serve.ag_ui_tools`). A call of one ends the run with `RUN_FINISHED` whose
`success` outcome names it in `pendingToolCallIds`; the next request's tool message carries its
result, and the paused run goes on (that result is not sent back as a `TOOL_CALL_RESULT`).

A paused run waits in this process, with its thread (at most `MAX_PAUSED_RUNS`, and
`MAX_PAUSED_RUNS_PER_USER` per caller, the oldest forgotten first); a restarted server has
forgotten it, and the thread goes on from its stored conversation. A paused run resumes once:
a client that disconnects from the resuming request cancels it, and the thread then goes on
from its stored conversation too.

A request the server refuses before running (bad JSON, a body that is no `RunAgentInput`, an
unknown role, a tool result for a call never made, too large, no token, no free run slot) is an
HTTP 4xx or 503 whose JSON body is a `RUN_ERROR` event (`message`, `code`).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunFinishedSuccessOutcome,
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
from ..agents.run_tools import offering
from ..dto import Message, Usage
from ..errors import PromptimusError
from .ag_ui_events import Translation
from .ag_ui_input import RunInput, read_run_input
from .ag_ui_tools import FrontEndTool, answering, front_end_tools
from .callers import scoped_id
from .openai_chat import run_failure
from .refusal import Refused
from .served import Served
from .served_run import ClientGone, ServedRun
from .served_text import served_text

__all__ = ["ag_ui_routes"]

log = logging.getLogger("promptimus.serve")

APPROVAL = "tool_approval"
MAX_PAUSED_RUNS = 10_000
"""Paused runs kept per server; past it the oldest is forgotten (its thread starts afresh)."""
MAX_PAUSED_RUNS_PER_USER = 1_000
"""Paused runs kept per caller; past it that caller's oldest is forgotten, so no caller's
many paused runs push out another's."""


def error_response(refused: Refused) -> JSONResponse:
    """A refusal in the protocol's own error shape: a `RUN_ERROR` event as the JSON body."""
    event = RunErrorEvent(message=refused.message, code=refused.code)
    return JSONResponse(
        event.model_dump(mode="json", by_alias=True), refused.status, headers=refused.headers
    )


@dataclass
class _Paused:
    """A thread's run waiting for its client: the state to resume, the calls waiting for
    approval (interrupt id to the model's call id), the front-end calls waiting for their
    result (call id to interrupt id), and the client's tools to offer again."""

    state: RunState
    approvals: dict[str, str]
    front: dict[str, str]
    tools: list[FrontEndTool]
    user: str = ""


@dataclass
class _Start:
    """What a request starts: a new run (`resume` None) or the paused one it answers."""

    resume: RunState | None = None
    decisions: dict[str, bool | str] | None = None
    results: dict[str, str] = field(default_factory=dict)
    tools: list[FrontEndTool] = field(default_factory=list)

    def unnamed(self) -> list[tuple[str, str]]:
        """The resumed run's calls that have no id (tool name, the id sent for each)."""
        if self.resume is None:
            return []
        return [(c.name, c.approval_id) for c in self.resume.paused if c.call_id is None]

    def unnamed_results(self) -> dict[str, list[str]]:
        """The client's results of those calls, by tool name, in order."""
        by_name: dict[str, list[str]] = {}
        for name, call in self.unnamed():
            if call in self.results:
                by_name.setdefault(name, []).append(self.results[call])
        return by_name


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


def _interrupts(paused: NeedsApproval, front_names: set[str]) -> _Paused:
    """Split a pause into calls waiting for approval and front-end calls for the client."""
    approvals: dict[str, str] = {}
    front: dict[str, str] = {}
    for call in paused.state.paused:
        if call.name in front_names and call.reason is None:
            front[call.call_id or call.approval_id] = call.approval_id
        else:
            approvals[call.approval_id] = call.call_id or call.approval_id
    return _Paused(paused.state, approvals, front, [])


def _interrupt(paused: RunState, approval_id: str) -> Interrupt:
    call = next(c for c in paused.paused if c.approval_id == approval_id)
    return Interrupt(
        id=call.approval_id,
        reason=APPROVAL,
        message=call.reason or f"The tool {call.name!r} needs your approval to run.",
        tool_call_id=call.call_id,
        response_schema={
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["approved"],
        },
        metadata={"toolName": call.name, "arguments": call.pending().arguments},
    )


def _fresh(given: RunInput, module: Any) -> _Start:
    """A new run: refused when the request answers something, or has nothing to answer."""
    if given.results:
        call = next(iter(given.results))
        raise Refused(
            400,
            f"The tool result for {call!r} answers no call this thread is waiting for.",
            "invalid_tool_result",
        )
    if given.resume:
        raise Refused(
            400, "resume answers an interrupt, but this thread has none waiting.", "invalid_resume"
        )
    if not given.new:
        raise Refused(400, "There is nothing to answer: send a user message.", "invalid_messages")
    if not isinstance(module, BaseAgent):
        return _Start()
    return _Start(tools=front_end_tools(given.tools, module.tool_names()))


def _resumed(given: RunInput, paused: _Paused) -> _Start:
    """The paused run, with the client's answers: every waiting call needs one."""
    unknown = [i for i in given.resume if i not in paused.approvals]
    if unknown:
        raise Refused(
            400, f"resume answers the unknown interrupt {unknown[0]!r}.", "invalid_resume"
        )
    strange = [c for c in given.results if c not in paused.front]
    if strange:
        raise Refused(
            400,
            f"The tool result for {strange[0]!r} answers no call this thread is waiting for.",
            "invalid_tool_result",
        )
    if not given.resume and not given.results:
        raise Refused(
            409,
            "This thread's run is waiting: answer its interrupts (resume) and send the results "
            "of its front-end tool calls first.",
            "interrupt_pending",
        )
    missing = [i for i in paused.approvals if i not in given.resume]
    if missing:
        raise Refused(
            400,
            f"resume must answer every waiting interrupt; {missing[0]!r} has none.",
            "invalid_resume",
        )
    unanswered = [c for c in paused.front if c not in given.results]
    if unanswered:
        raise Refused(
            400,
            f"Send the result of every front-end tool call; {unanswered[0]!r} has none.",
            "invalid_tool_result",
        )
    decisions: dict[str, bool | str] = {i: _decision(*given.resume[i]) for i in paused.approvals}
    decisions.update({approval: True for approval in paused.front.values()})
    return _Start(paused.state, decisions, dict(given.results), paused.tools)


def _paused_end(
    given: RunInput, start: _Start, paused: NeedsApproval, usage: Usage
) -> tuple[list[BaseEvent], _Paused]:
    """A paused run's RUN_FINISHED: interrupts for approvals, else the front-end calls for the
    client; and what waits for the client's answer."""
    waiting = _interrupts(paused, {tool.name for tool in start.tools})
    waiting.tools = start.tools
    outcome: RunFinishedOutcome
    if waiting.approvals:
        interrupts = [_interrupt(paused.state, i) for i in waiting.approvals]
        outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
    else:
        outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=list(waiting.front))
    finished = RunFinishedEvent(
        thread_id=given.thread_id, run_id=given.run_id, outcome=outcome, usage=_usage(usage)
    )
    return [finished], waiting


def _answer_end(
    translation: Translation, given: RunInput, final: FinalResult[Any], usage: Usage
) -> list[BaseEvent]:
    """A finished run's last events: what of the answer has not streamed, the state, and
    RUN_FINISHED."""
    answer = served_text(final.output)
    streamed = translation.streamed_text
    if not streamed:
        missing = answer
    elif answer.startswith(streamed):
        missing = answer[len(streamed) :]
    else:
        missing = ""
    ending: list[BaseEvent] = list(translation.answer(missing))
    if given.given.state is not None:
        snapshot = to_jsonable_python(given.given.state, fallback=str)
        ending.append(StateSnapshotEvent(snapshot=snapshot))
    result = None
    if not isinstance(final.output, str | Message):  # a structured answer, as JSON
        result = to_jsonable_python(final.output, fallback=str)
    ending.append(
        RunFinishedEvent(
            thread_id=given.thread_id, run_id=given.run_id, result=result, usage=_usage(usage)
        )
    )
    return ending


class _Face:
    """The endpoint of one served app: its paused runs (by scoped thread id) and encoder."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.paused: OrderedDict[str, _Paused] = OrderedDict()
        self.encoder = EventEncoder()

    async def endpoint(self, request: Request) -> Response:
        served = self.served
        try:
            user = served.caller(request)
            given = read_run_input(await served.body(request))
            session = served.session(user, given.thread_id)
            key = scoped_id(user, given.thread_id)
            paused = self.paused.get(key)
            start = _fresh(given, served.module) if paused is None else _resumed(given, paused)
            served.slots.take()
        except Refused as refused:
            return error_response(refused)
        if paused is not None:
            del self.paused[key]  # a paused run resumes once
        request_value: Any = given.new
        if not isinstance(served.module, BaseAgent):
            request_value = given.new[-1].content
        with (
            offering(served.module, start.tools),
            answering(start.results, start.unnamed_results()),
        ):
            run = ServedRun(
                served.module,
                request_value,
                session,
                served.slots,
                resume=start.resume,
                approvals=start.decisions,
                deps=given.given.state,
            )
        return StreamingResponse(
            self._stream(request, run, given, (user, key), start),
            media_type=self.encoder.get_content_type(),
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    def _out(self, event: BaseEvent) -> str:
        return self.encoder.encode(event)

    async def _stream(
        self,
        request: Request,
        run: ServedRun,
        given: RunInput,
        owner: tuple[str, str],
        start: _Start,
    ) -> AsyncIterator[str]:
        translation = Translation(set(start.results), start.unnamed())
        final: FinalResult[Any] | None = None
        paused: NeedsApproval | None = None
        events = run.events(request)
        try:
            yield self._out(RunStartedEvent(thread_id=given.thread_id, run_id=given.run_id))
            async for event in events:
                if isinstance(event, FinalResult):
                    final = event
                elif isinstance(event, NeedsApproval):
                    paused = event
                elif final is None and paused is None:
                    for translated in translation.events(event):
                        yield self._out(translated)
        except ClientGone:
            return
        except Exception as exc:
            for translated in translation.close():
                yield self._out(translated)
            yield self._out(_run_error(exc))
            return
        finally:
            await events.aclose()
            await run.cancel()  # closed before its events were asked for: the run stops too
        for chunk in self._ending(translation, run, given, owner, start, final, paused):
            yield chunk

    def _ending(
        self,
        translation: Translation,
        run: ServedRun,
        given: RunInput,
        owner: tuple[str, str],
        start: _Start,
        final: FinalResult[Any] | None,
        paused: NeedsApproval | None,
    ) -> list[str]:
        """The run's last events, all encoded before any is sent: one that cannot be written
        ends the stream with RUN_ERROR, never a cut connection."""
        try:
            waiting = None
            if paused is not None:
                last, waiting = _paused_end(given, start, paused, run.usage)
            elif final is not None:
                last = _answer_end(translation, given, final, run.usage)
            else:
                last = [_run_error(PromptimusError("the run ended without an answer"))]
            chunks = [self._out(event) for event in [*translation.close(), *last]]
        except Exception as exc:
            log.error("the AG-UI run's last events could not be written", exc_info=exc)
            return [self._out(_run_error(exc))]
        if waiting is not None:
            self._keep(owner, waiting)
        return chunks

    def _keep(self, owner: tuple[str, str], waiting: _Paused) -> None:
        """Keep a paused run for its thread (user, scoped id); past the caller's share its
        oldest waits no more, past the server's limit the oldest of all."""
        user, key = owner
        waiting.user = user
        self.paused[key] = waiting
        self.paused.move_to_end(key)
        mine = [k for k, p in self.paused.items() if p.user == user]
        for old in mine[: max(0, len(mine) - MAX_PAUSED_RUNS_PER_USER)]:
            del self.paused[old]
        while len(self.paused) > MAX_PAUSED_RUNS:
            self.paused.popitem(last=False)


def _run_error(exc: BaseException) -> RunErrorEvent:
    refused = run_failure(exc)
    return RunErrorEvent(message=refused.message, code=refused.code)


def ag_ui_routes(served: Served) -> list[Route]:
    return [Route("/ag-ui", _Face(served).endpoint, methods=["POST"])]
