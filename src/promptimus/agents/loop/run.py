"""The loop: one run from its request (or a paused state) to its outcome, step by step.

Each step builds its request (`request`), asks the model through the executor (`model_call`),
records the step and hands the reply to the agent's `_interpret`: a `Final` answer commits the
memory and ends the run, a `Retry` sends feedback, an `Act` runs the tool calls (`tool_calls`,
`approvals`) and carries their results to the next step. Steps are bounded by `max_steps`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ...dto import Message, MessageDelta, Usage
from ...dto.run_record import RunRecord, StepRecord
from ...errors import MaxIterExceeded, RequestRejected
from ...modules.memory import as_messages
from ...modules.partial_output_stream import StreamedAnswer
from ...observe.provider_calls import report_event
from ..events import (
    AgentEvent,
    FinalResult,
    NeedsApproval,
    PartialOutput,
    ReasoningDelta,
    TextDelta,
    ToolCallEvent,
)
from ..image_fallback import refused_images
from .active_run import ActiveRun, Emit
from .agent import LoopAgent
from .approvals import ResumePlan, pause, resume_run, run_screened
from .compaction import (
    compact_conversation,
    keep_compacted_history,
    record_native_compaction,
    with_native_edits,
)
from .decisions import Act, Final, Retry
from .guarding import (
    REPLACED,
    InputCheck,
    drop_input_check,
    guards_of,
    race_input_check,
    screen_output,
    screen_request,
    start_input_check,
)
from .hosted_calls import hosted_events, report_hosted_calls
from .model_call import ModelRequest
from .request import RunOptions, build_request, current_options
from .tool_calls import execute_tools, server_of

__all__ = ["Outcome", "drive"]

Outcome = FinalResult[Any] | NeedsApproval
_NO_USAGE = Usage()


async def drive(
    agent: LoopAgent,
    request: Any,
    deps: Any,
    prompt_vars: dict[str, Any],
    record: RunRecord,
    emit: Emit | None,
    resume: ResumePlan | None,
) -> Outcome:
    """Run `agent` on `request` (or on from the paused run `resume`), recording into
    `record` and showing `emit` the events of a stream; the outcome: a final result, or a
    pause for approval."""
    run = ActiveRun.of(agent, deps, prompt_vars, record, emit)
    agent._begin_run(run.llm, run.state)
    guards = guards_of(agent)
    check: InputCheck | None = None
    new: list[Message] = []
    try:
        if resume is None:
            run.request = request
            new = as_messages(request, agent.predictor.new_message_role)
            if guards is not None:
                new = await screen_request(run, guards.input, new)  # before any model request
                check = start_input_check(run, guards.parallel, new) if guards.parallel else None
            run.conversation = [*await agent.executor.history(run.memory), *new]
            run.history_size = len(run.conversation) - len(new)
            run.keep = list(new)  # what the memory gains if the run succeeds
        else:
            await resume_run(run, resume)
        return await _steps(run, check, new)
    finally:
        drop_input_check(check)  # a check the run failed before racing ends with it


async def _steps(run: ActiveRun, check: InputCheck | None, new: list[Message]) -> Outcome:
    """The run's steps, the first raced against the parallel input `check` if there is one,
    until a final result or a pause."""
    agent = run.agent
    options = RunOptions.build(run)
    guards = guards_of(agent)
    judged = guards is not None and bool(guards.output)  # a final answer waits for its verdict
    while True:
        options = await current_options(run, options)
        if run.steps >= agent.max_steps:
            raise MaxIterExceeded(
                f"{agent._where()} used all {agent.max_steps} steps (LLM calls) without a "
                "final answer. Raise max_steps, or check the tool results the model got "
                "(the conversation so far is in `.messages`, the steps in the run record).",
                messages=run.conversation,
            )
        await compact_conversation(run)
        step_request, offered = await build_request(run, options)
        step_request = with_native_edits(run, step_request)
        deltas = _Deltas.of(run, hold=judged or check is not None)
        if check is None:
            reply = await _call_model(run, step_request, deltas)
        else:
            # the reply waits for the input check too: what it blocks or replaces never shows
            allowed = None if deltas is None or judged else deltas.release
            call = partial(_call_model, run, step_request, deltas)
            raced = await race_input_check(run, check, new, call, allowed)
            check = None
            if raced is REPLACED:
                continue
            reply = raced  # type: ignore[assignment]
        if reply is None:  # rejected, and the agent adapted: send the step again
            options = options.adapted(run)
            continue
        record_native_compaction(run, step_request, reply)
        outcome = await _settle(run, step_request, reply, offered, options.approval, deltas)
        if outcome is not None:
            return outcome


class _Deltas:
    """Shows a streamed reply's pieces as events, counting them (a request the server rejects
    after some arrived cannot be sent again), and a structured answer's partial objects.

    While a guardrail has yet to judge the reply (an output guardrail its answer, a parallel
    input guardrail its request), the events are `held`, and shown only as the guardrails leave
    them: `release` shows them (and the pieces after them as they come), `replace` shows the
    replacement text alone, and what is never released is never shown."""

    __slots__ = ("count", "emit", "held", "reader", "step")

    def __init__(self, emit: Emit, step: int, reader: StreamedAnswer | None, hold: bool) -> None:
        self.emit, self.step, self.count, self.reader = emit, step, 0, reader
        self.held: list[AgentEvent] | None = [] if hold else None

    @classmethod
    def of(cls, run: ActiveRun, hold: bool) -> _Deltas | None:
        """The sink of the run's next step; None when nobody listens (the run does not stream)."""
        if run.emit is None:
            return None
        return cls(run.emit, len(run.record.steps), run.agent._partial_reader(run.state), hold)

    def __call__(self, delta: MessageDelta) -> None:
        self.count += 1
        if delta.hosted_calls:  # the server ran them: nothing runs here
            for event in hosted_events(delta.hosted_calls, self.step):
                self._show(event)
        if delta.reasoning:
            self._show(ReasoningDelta(delta.reasoning, self.step))
        if delta.content:
            self._show(TextDelta(delta.content, self.step))
        if self.reader is not None:
            snapshot = self.reader.read(delta)
            if snapshot is not None:
                self._show(PartialOutput(snapshot, self.step))

    @property
    def holding(self) -> bool:
        return self.held is not None

    def _show(self, event: AgentEvent) -> None:
        if self.held is None:
            self.emit(event)
        else:
            self.held.append(event)

    def release(self) -> None:
        """The guardrails allowed the reply: what was held shows now, the rest as it comes."""
        held, self.held = self.held, None
        for event in held or ():
            self.emit(event)

    def replace(self, text: str) -> None:
        """The guardrails replaced the reply's text: only `text` shows."""
        self.held = None
        if text:
            self.emit(TextDelta(text, self.step))


async def _call_model(
    run: ActiveRun, request: ModelRequest, deltas: _Deltas | None
) -> Message | None:
    """The reply to one step's request; None when the server rejected it and the agent adapted
    (a weaker structured-output mode, images described in text)."""
    agent, llm, state = run.agent, run.llm, run.state
    try:
        reply = await agent.executor.call_model(run.prompt, request, deltas)
    except RequestRejected as exc:
        if (deltas is not None and deltas.count) or not (
            agent._on_rejected(llm, exc, state) or refused_images(llm, request.messages, exc)
        ):
            raise
        return None
    agent._on_accepted(llm, state)
    return reply


async def _settle(
    run: ActiveRun,
    request: ModelRequest,
    reply: Message,
    offered: list[str] | None,
    approval: bool,
    deltas: _Deltas | None,
) -> Outcome | None:
    """Record the step and act on what the agent makes of its reply (None: go on). A reply
    held from the stream shows as the guardrails leave it (see `_Deltas`)."""
    index = len(run.record.steps)
    step = StepRecord(index, request.messages, reply, [], reply.usage or _NO_USAGE, offered)
    run.record.steps.append(step)
    run.steps += 1
    if reply.hosted_calls:
        report_hosted_calls(run.agent, step)
    decision = run.agent._interpret(reply, run.state)
    held = deltas is not None and deltas.holding
    if isinstance(decision, Final):
        guards = guards_of(run.agent)
        if guards is not None and guards.output:
            screened = await screen_output(run, guards.output, index, decision)
            if isinstance(screened, Retry):
                screened.reply = decision.message  # the answer as the conversation keeps it
                _retry(run, step, screened, _withheld(reply, "") if held else None)
                return None
            if screened is not decision:
                if deltas is not None:
                    deltas.replace(screened.message.content)
                shown = _withheld(screened.message, screened.message.content)
                return await _finish(run, step, screened, shown)
        if deltas is not None:
            deltas.release()
        return await _finish(run, step, decision)
    if isinstance(decision, Retry):
        # an unusable reply is no answer, and no guardrail judged it: it is not shown
        _retry(run, step, decision, _withheld(reply, "") if held else None)
        return None
    if deltas is not None:
        deltas.release()  # a step that calls tools: its text is no answer the guardrails judge
    return await _act(run, step, decision, offered, approval)


def _withheld(reply: Message, text: str) -> Message:
    """`reply` as a stream may show it once the guardrails replaced (or blocked) its text: that
    text, without the reasoning that led to the original."""
    return reply.model_copy(update={"content": text, "reasoning": None, "thinking": None})


async def _finish(
    run: ActiveRun, step: StepRecord, decision: Final, shown: Message | None = None
) -> FinalResult[Any]:
    """The answer: the memory gains the whole run in one piece (request, tool loop, answer)."""
    run.conversation.append(decision.message)
    run.keep.append(decision.message)
    run.record.output = decision.output
    keep_compacted_history(run)
    await run.agent.executor.commit(run.memory, run.keep)
    run.step_end(step, shown)
    return FinalResult(decision.output, run.record)


def _retry(run: ActiveRun, step: StepRecord, decision: Retry, shown: Message | None = None) -> None:
    """An unusable reply: the feedback goes to the model, and neither into the memory."""
    state = run.state
    state.retries += 1
    report_event(
        run.agent,
        "retry",
        {"step": step.index, "retry": state.retries, "feedback": decision.feedback.content},
    )
    if not decision.counts_as_step:
        run.steps -= 1
    reply = step.reply if decision.reply is None else decision.reply
    run.conversation = [*run.conversation, reply, *decision.answers, decision.feedback]
    run.step_end(step, shown)


async def _act(
    run: ActiveRun, step: StepRecord, decision: Act, offered: list[str] | None, approval: bool
) -> NeedsApproval | None:
    """Run the reply's tool calls and carry their results to the next step, or pause before
    those that wait for approval."""
    agent, index, calls = run.agent, step.index, decision.calls
    run.conversation = [*run.conversation, decision.message, *decision.answered]
    run.keep.extend([decision.message, *decision.answered])
    if run.emit is not None:
        for call in calls:
            server = server_of(agent, call.name)
            run.emit(ToolCallEvent(call.id, call.name, call.arguments, index, server))
    ctx = run.tool_context(index)
    guarded = guards_of(agent)
    if guarded is None or not guarded.tool:
        guarded = None
    if offered is None and not approval and not agent.executor.holds_calls and guarded is None:
        records = await execute_tools(agent, calls, ctx, run.emit)
    else:
        records, paused = await run_screened(
            run, calls, ctx, offered, approval, guarded.tool if guarded else ()
        )
        if paused:
            step.tool_calls = records
            return pause(run, index, paused)
    step.tool_calls = records
    run.observe(calls, records)
    run.step_end(step)
    return None
