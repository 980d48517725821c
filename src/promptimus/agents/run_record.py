"""How run records find each other: the record of the run in progress, and the captures that
attach a sub-agent's record to the tool call that ran it. The records themselves are plain data
in `promptimus.dto.run_record` (served here too).

An agent does, for one run::

    record = RunRecord()
    with recording(record):                 # record becomes `current_record()`
        ...                                 # each LLM call appends a StepRecord
        with capture_records() as children: # around one tool call
            text = await tool.call(args, ctx)
        ToolCallRecord(..., children=children)

A caller who only has `await agent(...)` can collect the record the same way::

    with capture_records() as runs:
        answer = await agent("hi")
    runs[0].steps
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from ..dto.run_record import RunRecord as RunRecord
from ..dto.run_record import StepRecord as StepRecord
from ..dto.run_record import ToolCallRecord as ToolCallRecord

__all__ = [
    "RunRecord",
    "StepRecord",
    "ToolCallRecord",
    "capture_records",
    "current_record",
    "recording",
]

_current: contextvars.ContextVar[RunRecord | None] = contextvars.ContextVar(
    "promptimus_run_record", default=None
)
# The list an enclosing `capture_records()` collects into. A mutable list, so records appended in
# tasks spawned inside the capture (which see a *copy* of the context) still reach it.
_sink: contextvars.ContextVar[list[RunRecord] | None] = contextvars.ContextVar(
    "promptimus_run_record_sink", default=None
)


def current_record() -> RunRecord | None:
    """The record of the innermost run in progress in this context, or None outside any run."""
    return _current.get()


@contextmanager
def recording(record: RunRecord) -> Iterator[RunRecord]:
    """Make `record` the current run record for the block, and hand it to the enclosing
    `capture_records()` if there is one. Runs started inside the block (sub-agents) report to
    captures opened inside it, never past it to the outer capture."""
    sink = _sink.get()
    if sink is not None:
        sink.append(record)
    current_token = _current.set(record)
    sink_token = _sink.set(None)
    try:
        yield record
    finally:
        _sink.reset(sink_token)
        _current.reset(current_token)


@contextmanager
def capture_records(propagate: bool = False) -> Iterator[list[RunRecord]]:
    """Collect the records of the runs that start directly inside the block, in start order.

    With `propagate`, the collected records are also handed to the enclosing capture, if any,
    when the block ends (so `agent.run(...)` inside a tool still reports to the parent agent)."""
    runs: list[RunRecord] = []
    outer = _sink.get() if propagate else None
    token = _sink.set(runs)
    try:
        yield runs
    finally:
        _sink.reset(token)
        if outer is not None:
            outer.extend(runs)
