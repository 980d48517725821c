"""`promptimus run file.py:object INPUT`: one call, its output (or its events, or its record)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
from typing import Any, TextIO

from pydantic_core import to_jsonable_python

from ..agents.base_agent import BaseAgent
from ..agents.events import FinalResult, TextDelta, ToolCallEvent, ToolErrorEvent, ToolResultEvent
from ..agents.run_record import capture_records
from ..core.module import Module
from ..dto import Message
from ..observe.usage import track_usage
from .command_error import CommandLineError
from .output_text import output_text
from .style import Style


async def stream_once(
    module: BaseAgent[Any], request: str, stdout: TextIO, variables: dict[str, Any]
) -> None:
    style = Style(stdout)
    streamed = False
    async for event in module.stream(request, **variables):
        if isinstance(event, TextDelta):
            stdout.write(event.text)
            streamed = True
        elif isinstance(event, ToolCallEvent):
            stdout.write(style(f"\n-> {event.name}({event.arguments})\n", "cyan"))
        elif isinstance(event, ToolResultEvent):
            stdout.write(style(f"<- {event.name}: {event.result}\n", "dim"))
        elif isinstance(event, ToolErrorEvent):
            stdout.write(style(f"<- {event.name} failed: {event.error}\n", "red"))
        elif isinstance(event, FinalResult) and (
            not streamed or not isinstance(event.output, str | Message)
        ):  # a structured answer comes whole (as a tool's arguments), not as text
            stdout.write(output_text(event.output))
        stdout.flush()
    stdout.write("\n")


async def record_once(module: Module, request: str, variables: dict[str, Any]) -> dict[str, Any]:
    if isinstance(module, BaseAgent):
        return (await module.run(request, **variables)).record.to_dict()
    with track_usage() as usage, capture_records() as runs:
        output = await module(request, **variables)
    return {
        "output": to_jsonable_python(output, fallback=str),
        "usage": dataclasses.asdict(usage.total),
        "runs": [run.to_dict() for run in runs],
    }


async def run_once(
    module: Module,
    request: str,
    stream: bool,
    as_json: bool,
    variables: dict[str, Any] | None = None,
) -> None:
    """One call of `module` on `request`; `variables` fill its prompt's template variables."""
    variables = variables or {}
    stdout = sys.stdout
    if stream and as_json:
        raise CommandLineError("--stream and --json cannot be combined; pick one.")
    if as_json:
        stdout.write(json.dumps(await record_once(module, request, variables), indent=2) + "\n")
    elif stream and isinstance(module, BaseAgent):
        await stream_once(module, request, stdout, variables)
    else:
        if stream:
            sys.stderr.write(
                f"{type(module).__name__} has no event stream (only agents do); "
                "printing the result when it is done.\n"
            )
        if isinstance(module, BaseAgent):
            result = await module.run(request, **variables)
            stdout.write(output_text(result.output) + "\n")  # a paused run raises here
            summarize(result.summary())
        else:
            stdout.write(output_text(await module(request, **variables)) + "\n")


def summarize(line: str) -> None:
    """The run's summary (`RunResult.summary()`: steps, tool calls, tokens) on stderr, so what
    stdout carries stays the answer alone; a closed stderr only loses the line."""
    with contextlib.suppress(Exception):
        sys.stderr.write(Style(sys.stderr)(f"[{line}]", "dim") + "\n")
