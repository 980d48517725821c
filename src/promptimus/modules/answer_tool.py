"""The answer tool: an agent's structured answer as one more tool the model calls when it is done.

An agent with tools and a `structural_output` offers the model its tools and one more,
`final_result` (`final_result_2`, ... when a tool of the agent has that name), whose parameters
are the output model's JSON schema (strict when OpenAI's strict mode can express it). The model
calls its tools as it needs, then calls the answer tool: the call's arguments are the answer.
No `response_format` travels beside the tools (with one, many models answer at once and skip
their tools), and `tool_choice` stays the server's default, "auto".

`output_mode` chooses how an agent asks for its structured answer:
- "tool": the answer tool (the default for an agent with tools);
- "native": `response_format` with the JSON schema (the default without tools), degrading to
  json_object and then prompted on servers that reject it (see `promptimus.modules.structural`);
- "prompted": the schema in a system message, no `response_format`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel

from ..errors import InvalidArgument
from .structural import openai_response_format

__all__ = [
    "ANSWER_TOOL_NAME",
    "OUTPUT_MODES",
    "OutputMode",
    "answer_tool",
    "answer_tool_name",
    "check_output_mode",
    "not_taken_text",
]

OutputMode = Literal["tool", "native", "prompted"]

OUTPUT_MODES: tuple[OutputMode, ...] = ("tool", "native", "prompted")

ANSWER_TOOL_NAME = "final_result"
"""The answer tool's name, unless one of the agent's tools already has it."""

_DESCRIPTION = (
    "Give your final answer. Call this once you have everything the answer needs (after the "
    "results of your other tool calls are in): its arguments are the answer."
)


def check_output_mode(value: Any) -> OutputMode | None:
    """`value` as an output mode (None: chosen from the agent's tools), or `InvalidArgument`."""
    if value is None:
        return None
    if isinstance(value, str) and value in OUTPUT_MODES:
        return value
    raise InvalidArgument(
        f"output_mode must be one of 'tool', 'native' or 'prompted' (or None to choose "
        f"'tool' when the agent has tools and 'native' otherwise), got {value!r}."
    )


def answer_tool_name(taken: Collection[str]) -> str:
    """`final_result`, or the first of `final_result_2`, `final_result_3`, ... not in `taken`."""
    if ANSWER_TOOL_NAME not in taken:
        return ANSWER_TOOL_NAME
    number = 2
    while f"{ANSWER_TOOL_NAME}_{number}" in taken:
        number += 1
    return f"{ANSWER_TOOL_NAME}_{number}"


def answer_tool(output_model: type[BaseModel], name: str) -> dict[str, Any]:
    """The OpenAI `tools` entry of the answer tool for `output_model` (the providers translate
    it like any other tool)."""
    schema = openai_response_format(output_model)["json_schema"]
    description = _DESCRIPTION
    about = output_model.model_json_schema().get("description")
    if isinstance(about, str) and about.strip():
        description = f"{description}\nThe answer: {about.strip()}"
    function: dict[str, Any] = {
        "name": name,
        "description": description,
        "parameters": schema["schema"],
    }
    if schema["strict"]:
        function["strict"] = True
    return {"type": "function", "function": function}


def not_taken_text(name: str, reason: str) -> str:
    """The result the model reads for a call of the answer tool that did not end the run."""
    return f"Not taken: {reason} Call {name} again when you have the answer."
