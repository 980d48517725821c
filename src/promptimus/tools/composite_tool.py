"""`CompositeTool`: several tools behind one, so the model can make a batch of calls in one go.

    files = CompositeTool("file", "File operations.", [write, append, read])

The model sends `{"calls": [{"name": "write", "args": {...}}, {"name": "read", "args": {...}}]}`.
The calls run in order; a call that fails (unknown name, bad arguments, an exception) is recorded
as an error and the rest still run. The model reads back
`{"results": [{"name": "write", "result": "OK"}, {"name": "read", "error": "..."}]}`.

Timeouts: the composite's `timeout` (else the agent's `tool_timeout`) bounds the whole batch;
a sub-tool's own `timeout` bounds its call, and a sub-call that times out is recorded as an
error like any other failed call.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..core import ModuleDict
from ..errors import ToolArgumentsError, ToolError, ToolExecutionError
from .base import Tool
from .results import tool_result_to_jsonable
from .run_context import RunContext
from .sources import toolset
from .tool_schema import ArgSpec, FunctionSchema, SchemaChecked

__all__ = ["CompositeTool", "SubCall"]


class SubCall(BaseModel):
    """One call inside a composite call."""

    model_config = ConfigDict(extra="forbid")

    name: str
    args: dict[str, Any] = Field(default_factory=dict)


def _rewrite_refs(node: Any, renames: Mapping[str, str]) -> Any:
    if isinstance(node, dict):
        out = {key: _rewrite_refs(value, renames) for key, value in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = ref[len("#/$defs/") :]
            out["$ref"] = "#/$defs/" + renames.get(target, target)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(item, renames) for item in node]
    return node


def composite_parameters(tools: Sequence[Tool]) -> dict[str, Any]:
    """`{"calls": [...]}` whose items are an `anyOf` of `{"name": <tool>, "args": <its schema>}`.
    The sub-tools' `$defs` merge at the top; a name two tools define differently is prefixed."""
    merged: dict[str, Any] = {}
    variants: list[dict[str, Any]] = []
    for tool in tools:
        params = copy.deepcopy(tool.parameters_schema)
        defs: dict[str, Any] = params.pop("$defs", {})
        renames: dict[str, str] = {}
        for def_name, definition in defs.items():
            if def_name in merged and merged[def_name] != definition:
                renames[def_name] = f"{tool.name}_{def_name}"
        for def_name, definition in defs.items():
            merged[renames.get(def_name, def_name)] = _rewrite_refs(definition, renames)
        variants.append(
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "enum": [tool.name]},
                    "args": _rewrite_refs(params, renames),
                },
                "required": ["name", "args"],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "calls": {
                "type": "array",
                "description": "The calls to make, run in this order.",
                "items": {"anyOf": variants},
            }
        },
        "required": ["calls"],
        "additionalProperties": False,
    }
    if merged:
        schema["$defs"] = merged
    return schema


class CompositeTool(SchemaChecked, Tool):
    """One tool that runs a list of sub-tool calls in order, recording each call's error without
    stopping the others. The sub-tools are submodules (`tools.<name>`), so their descriptions
    are checkpointed with the composite."""

    def __init__(
        self,
        name: str,
        description: str,
        tools: Sequence[Tool],
        timeout: float | None = None,
    ) -> None:
        super().__init__(name=name, description=description, timeout=timeout)
        by_name = toolset(tools)
        if not by_name:
            raise ToolError(f"CompositeTool {name!r} needs at least one sub-tool.")
        model = create_model(
            "CompositeArguments",
            __config__=ConfigDict(extra="forbid"),
            p_calls=(list[SubCall], Field(alias="calls")),
        )
        self._schema = FunctionSchema(
            summary=description,
            parameters=composite_parameters(list(by_name.values())),
            model=model,
            args=(ArgSpec("calls", "p_calls", False),),
            context_params=(),
        )
        self.tools = ModuleDict(by_name)

    @property
    def full_description(self) -> str:
        """The description the model sees: the composite's own, then one line per sub-tool."""
        lines = [self.description.value or f"Run several {self._name} operations."]
        lines.append(
            'Call with {"calls": [{"name": ..., "args": {...}}, ...]}; calls run in order and '
            "a failed call does not stop the others. Available:"
        )
        for tool in self._sub_tools():
            text = " ".join(tool.description.value.split())
            lines.append(f"- {tool.name}: {text}" if text else f"- {tool.name}")
        return "\n".join(lines)

    @property
    def model_description(self) -> str:
        return self.full_description

    def _sub_tools(self) -> list[Tool]:
        return [tool for tool in self.tools.values() if isinstance(tool, Tool)]

    def handle_call(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None
    ) -> Awaitable[Any]:
        return self.forward(self.validate(arguments).get("calls", []), ctx)

    async def forward(
        self,
        calls: Sequence[SubCall | Mapping[str, Any]],
        ctx: RunContext[Any] | None = None,
    ) -> dict[str, Any]:
        """Run `calls` in order; returns `{"results": [{"name", "result"} | {"name", "error"}]}`."""
        results: list[dict[str, Any]] = []
        for raw in calls:
            call = SubCall.model_validate(raw)
            tool = self.tools.get(call.name)
            if not isinstance(tool, Tool):
                available = ", ".join(self.tools)
                error = f"Unknown tool {call.name!r}; available: {available}."
                results.append({"name": call.name, "error": error})
                continue
            try:  # a result with no JSON form is that call's failure, like an exception
                result = tool_result_to_jsonable(await tool.run(call.args, ctx))
            except (ToolArgumentsError, ToolExecutionError) as exc:
                results.append({"name": call.name, "error": str(exc)})
            else:
                results.append({"name": call.name, "result": result})
        return {"results": results}

    @property
    def may_need_approval(self) -> bool:
        return any(tool.may_need_approval for tool in self._sub_tools())

    async def needs_approval(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None = None
    ) -> bool:
        """A composite call needs approval when any of its sub-calls does, so wrapping a tool
        in a composite never skips the approval the tool asks for."""
        try:
            values = self.validate(arguments)
        except ToolArgumentsError:
            return False
        for raw in values.get("calls", []):
            call = SubCall.model_validate(raw)
            tool = self.tools.get(call.name)
            if isinstance(tool, Tool) and await tool.needs_approval(call.args, ctx):
                return True
        return False
