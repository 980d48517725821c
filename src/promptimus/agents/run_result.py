"""`RunResult`: what `agent.run(...)` returns — a finished run, or one paused for approval."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from ..dto.display import clip, html_table, short_text
from ..errors import ApprovalRequired

if TYPE_CHECKING:
    from ..dto.run_record import RunRecord
    from .run_state import PendingToolCall, RunState

__all__ = ["RunResult", "RunStatus"]

OutputT = TypeVar("OutputT")

RunStatus = Literal["completed", "needs_approval"]


class RunResult(Generic[OutputT]):
    """The result of `agent.run(...)`.

    - `status`: "completed", or "needs_approval" when the run paused before tool calls that
      need a person's approval.
    - `output`: what `forward` returns (completed runs only: reading it on a paused run raises
      `ApprovalRequired`, so a paused run is never mistaken for an answer).
    - `record`: the run's `RunRecord` (so far, when paused).
    - `pending`: the calls waiting for approval (`id`, `tool`, `arguments`); empty when completed.
    - `state`: the `RunState` to resume with; None when completed.

    A completed result unpacks like the pair it used to be: `output, record = await agent.run(...)`.
    """

    __slots__ = ("_output", "pending", "record", "state", "status")

    def __init__(
        self,
        output: OutputT,
        record: RunRecord,
        status: RunStatus = "completed",
        pending: list[PendingToolCall] | None = None,
        state: RunState | None = None,
    ) -> None:
        self._output = output
        self.record = record
        self.status: RunStatus = status
        self.pending: list[PendingToolCall] = pending or []
        self.state = state

    @property
    def output(self) -> OutputT:
        if self.status != "completed":
            names = ", ".join(f"{p.tool} ({p.id})" for p in self.pending)
            if self.state is None:  # a durable run's pause: it waits inside its workflow
                how = (
                    "decide each pending call with `await durable.approve(workflow_id, "
                    "call.id, True | False | 'reason')` (from any process); the run goes on "
                    "once all are decided, and `await durable.result(workflow_id)` returns it."
                )
            else:
                how = (
                    "resume with `agent.run(resume=result.state, "
                    "approvals={id: True | False | 'reason'})`."
                )
            raise ApprovalRequired(
                f"The run has no output yet: it paused for approval of {names}. Check "
                f"`result.status` first; {how}",
                result=self,
            )
        return self._output

    def __iter__(self) -> Iterator[Any]:
        yield self.output
        yield self.record

    def __len__(self) -> int:
        return 2

    def __getitem__(self, index: int) -> Any:
        return (self.output, self.record)[index]

    # --- display: a short summary; `output`, `record`, `pending` hold everything ------------

    def summary(self) -> str:
        """One line: the status, then the record's steps, tool calls and tokens."""
        return f"{self.status}: {self.record.summary()}"

    def _waiting(self) -> list[str]:
        return [f"{p.tool}({clip(str(p.arguments), 40)}) [{p.id}]" for p in self.pending]

    def __repr__(self) -> str:
        if self.status == "completed":
            return f"<RunResult {self.summary()}; output {clip(short_text(self._output))!r}>"
        return f"<RunResult {self.summary()}; waiting for {', '.join(self._waiting())}>"

    def __str__(self) -> str:
        lines = [f"RunResult {self.summary()}"]
        if self.status == "completed":
            lines.append(f"  output: {clip(short_text(self._output), 100)}")
        else:
            lines += [f"  waiting for approval: {call}" for call in self._waiting()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        if self.status == "completed":
            rows = [("output", clip(short_text(self._output), 200))]
        else:
            rows = [("waiting for approval", call) for call in self._waiting()]
        rows += [
            (f"step {step.index}", ", ".join(c.name for c in step.tool_calls) or "(answer)")
            for step in self.record.steps
        ]
        return html_table(f"RunResult {self.summary()}", ["", ""], rows)
