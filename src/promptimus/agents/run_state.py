"""`RunState`: a run paused for tool approval, to resume now, later, or in another process.

    result = await agent.run("Delete the old backups", deps=deps)
    if result.status == "needs_approval":
        saved = result.state.to_json()          # store it with the pending calls shown to a person
        ...
        state = RunState.from_json(saved)       # maybe in another process, on a fresh agent
        result = await agent.run(resume=state, approvals={"call_1": True}, deps=deps)

The state holds what the run needs to go on: the conversation so far, the messages the memory
gains when the run completes, the step count, the paused step's calls (those that ran, with
their results, and those pending), and the record so far. It does not hold `deps` or template
variables: pass them again to the resuming call. It names the agent it belongs to (its path,
class and tool names), so another agent refuses it, and it can be resumed once (see
`resume_ledger`).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pydantic_core
from pydantic import ValidationError

from ..dto import Message
from ..dto.run_record import RunRecord
from ..errors import InvalidArgument, MissingApproval, RunStateError, RunStateMismatch
from .run_state_format import FORMAT, PausedCallData, StateFormatError, read_state_document

__all__ = ["Approval", "PendingToolCall", "RunState", "resuming"]

Approval = bool | str
"""A person's decision on one pending call: True (run it), False (deny), or a reason (deny)."""


class Owner(Protocol):
    """What a paused run knows of the agent it belongs to: its place in the tree, its class (by
    `type(...)`) and its tool names."""

    @property
    def path(self) -> str: ...

    def tool_names(self) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class PendingToolCall:
    """A tool call waiting for approval: `id` (the key of `approvals={...}`), the `tool`'s name
    and the `arguments` the model gave (decoded JSON). `reason` says why a call of a tool that
    does not ask for approval waits anyway (a durable run that cannot tell whether it ran);
    None for a tool that `requires_approval`."""

    id: str
    tool: str
    arguments: dict[str, Any]
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PausedCall:
    """A pending call as the agent will run it: its position in the reply's calls, the
    model's call id and arguments text, and the arguments a text protocol already parsed."""

    approval_id: str
    position: int
    call_id: str | None
    name: str
    arguments: str
    parsed: dict[str, Any] | None = None
    reason: str | None = None

    def pending(self) -> PendingToolCall:
        if self.parsed is not None:
            arguments = self.parsed
        else:
            try:
                decoded = pydantic_core.from_json(self.arguments or "{}")
            except ValueError:
                decoded = None
            arguments = decoded if isinstance(decoded, dict) else {}
        return PendingToolCall(self.approval_id, self.name, arguments, self.reason)


def agent_fingerprint(agent: Owner) -> str:
    """A short hash of the agent's class and tool names: a state from an agent with other tools
    (or of another kind) does not fit this one."""
    text = "\n".join([type(agent).__qualname__, *sorted(agent.tool_names())])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(slots=True, eq=False)
class RunState:
    """A paused run (see the module docstring). Build one only through `agent.run`, or
    `RunState.from_json` from `to_json()`'s text."""

    id: str
    agent: str
    fingerprint: str
    step: int
    steps: int
    conversation: list[Message]
    keep: list[Message]
    record: RunRecord
    paused: list[PausedCall]
    retries: int = 0
    rejected: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    history: int = 0
    """How many messages at the start of `conversation` are the history the run started from
    (compacted, if compaction changed it): what compaction may still change when it resumes."""
    compacted_from: list[Message] | None = None
    """The history the run started from, when compaction changed it before the pause: the
    memory gets the compacted history in its place when the resumed run succeeds."""

    @classmethod
    def new(cls, agent: Owner, **fields: Any) -> RunState:
        return cls(uuid.uuid4().hex, agent.path, agent_fingerprint(agent), **fields)

    @property
    def pending(self) -> list[PendingToolCall]:
        """The calls waiting for a decision, in the order the model made them."""
        return [call.pending() for call in self.paused]

    def belongs_to(self, agent: Owner) -> bool:
        """Whether `agent` (the same class, place in the tree and tool names) paused this run."""
        return self.agent == agent.path and self.fingerprint == agent_fingerprint(agent)

    def check_agent(self, agent: Owner) -> None:
        if not self.belongs_to(agent):
            raise RunStateMismatch(
                f"This paused run belongs to the agent at {self.agent!r} (fingerprint "
                f"{self.fingerprint}), not to {type(agent).__name__} at {agent.path!r} "
                f"(fingerprint {agent_fingerprint(agent)}, tools: "
                f"{', '.join(agent.tool_names()) or 'none'}). Resume it on an agent built like "
                "the one that paused it: the same class, place in the tree and tool names."
            )

    def decisions(self, approvals: Mapping[str, Approval] | None) -> dict[str, Approval]:
        """`approvals` checked against the pending calls: exactly one decision each."""
        if approvals is None:
            approvals = {}
        if not isinstance(approvals, Mapping):
            raise InvalidArgument(
                f"approvals must be a dict {{call id: True | False | 'reason'}}, got "
                f"{type(approvals).__name__}."
            )
        pending = [call.approval_id for call in self.paused]
        missing = [key for key in pending if key not in approvals]
        unknown = [key for key in approvals if key not in pending]
        if missing or unknown:
            parts = []
            if missing:
                parts.append(f"no decision for {_ids(missing)}")
            if unknown:
                parts.append(f"{_ids(unknown)} {'is' if len(unknown) == 1 else 'are'} not pending")
            raise MissingApproval(
                f"Cannot resume: {'; '.join(parts)}. Decide every pending call, by the ids in "
                f"`result.pending` ({_ids(pending)}): True to run it, False or a reason to deny it."
            )
        for key, value in approvals.items():
            if not isinstance(value, bool | str):
                raise InvalidArgument(
                    f"The decision for {key!r} is {type(value).__name__}; use True (run it), "
                    "False (deny it) or a string (deny it, with that reason for the model)."
                )
        return dict(approvals)

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> str:
        """The state as JSON text (conversation, record and pending calls; no deps)."""
        data = {
            "format": FORMAT,
            "id": self.id,
            "agent": self.agent,
            "fingerprint": self.fingerprint,
            "step": self.step,
            "steps": self.steps,
            "retries": self.retries,
            "rejected": self.rejected,
            "errors": self.errors,
            "conversation": [_dump(m) for m in self.conversation],
            "keep": [_dump(m) for m in self.keep],
            "record": self.record.to_dict(),
            "paused": [dataclasses.asdict(call) for call in self.paused],
            "history": self.history,
        }
        if self.compacted_from is not None:
            data["compacted_from"] = [_dump(m) for m in self.compacted_from]
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        """Read a state written by `to_json()`; `RunStateError` if the text is not one. The
        text is read within limits and every field is checked before anything is built (see
        `run_state_format`)."""
        try:
            data = read_state_document(text)
            record = RunRecord.from_dict(data["record"])  # type: ignore[arg-type]
            if not record.steps:
                raise ValueError("the record has no step (a paused run has at least one)")
            calls = len(record.steps[-1].tool_calls)
            paused = [_paused_call(call, calls) for call in data["paused"]]
            if not paused:
                raise ValueError("no call is pending (only a paused run has a state)")
            return cls(
                id=data["id"],
                agent=data["agent"],
                fingerprint=data["fingerprint"],
                step=data["step"],
                steps=data["steps"],
                conversation=[Message.model_validate(m) for m in data["conversation"]],
                keep=[Message.model_validate(m) for m in data["keep"]],
                record=record,
                paused=paused,
                retries=data.get("retries", 0),
                rejected=list(data.get("rejected", [])),
                errors=list(data.get("errors", [])),
                history=data.get("history", 0),
                compacted_from=_messages(data.get("compacted_from")),
            )
        except (ValueError, ValidationError) as exc:
            problem = str(exc) if isinstance(exc, StateFormatError) else _describe(exc)
            raise RunStateError(
                f"Cannot read a paused run's state: {problem}. Pass the exact text "
                "`result.state.to_json()` returned."
            ) from None

    def __repr__(self) -> str:
        pending = ", ".join(f"{c.approval_id}:{c.name}" for c in self.paused)
        return (
            f"RunState(id={self.id!r}, agent={self.agent!r}, step={self.step}, pending=[{pending}])"
        )


def denial_text(name: str, decision: Approval) -> str:
    """What the model reads for a denied call."""
    text = f"The user did not approve this call of {name!r}, so it was not run."
    if isinstance(decision, str) and decision.strip():
        text += f" Reason: {decision.strip()}"
    return text


def _messages(data: list[Any] | None) -> list[Message] | None:
    return None if data is None else [Message.model_validate(m) for m in data]


def _dump(message: Message) -> dict[str, Any]:
    return message.model_dump(mode="json", exclude_none=True)


def _paused_call(data: PausedCallData, calls: int) -> PausedCall:
    """One pending call read back (its fields already checked): its position must be among
    the paused step's `calls` tool calls, so a resume cannot fail halfway."""
    call = PausedCall(
        data["approval_id"],
        data["position"],
        data["call_id"],
        data["name"],
        data["arguments"],
        data.get("parsed"),
        data.get("reason"),
    )
    if not call.position < calls:
        raise ValueError(
            f"the pending call's position {call.position} is not among the step's calls"
        )
    return call


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors(include_url=False)[0]
        return f"{'.'.join(map(str, error['loc']))}: {error['msg']}"
    return str(exc)


def _ids(keys: Iterable[str]) -> str:
    return ", ".join(repr(k) for k in keys)


_resuming: contextvars.ContextVar[RunState | None] = contextvars.ContextVar(
    "promptimus_resuming", default=None
)


def resuming() -> RunState | None:
    """The paused run's state the agent run under way resumes (`run(resume=...)` or
    `stream(resume=...)`), None in a new run. Observers (the board's recorder) read it to show
    a resumed run as the continuation of the run that paused."""
    return _resuming.get()


@contextlib.contextmanager
def resuming_from(state: RunState | None) -> Iterator[None]:
    """Within the block, `resuming()` is `state` (nothing changes for None)."""
    if state is None:
        yield
        return
    token = _resuming.set(state)
    try:
        yield
    finally:
        _resuming.reset(token)
