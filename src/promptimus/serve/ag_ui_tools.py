"""Front-end tools: the tools an AG-UI client declares in its `RunAgentInput`, offered to the
served agent's model beside its own and run by the client.

A `FrontEndTool` asks for approval on every call, so the agent's run pauses at such a call
exactly as it pauses for a person (`NeedsApproval`, a `RunState`): the AG-UI face ends the run
there with the call for the client, and resumes the paused run when the client sends the call's
result. The resumed run "runs" the call, which hands back the client's result (set for that
request with `answering(...)`). The arguments are checked to be a JSON object; the client checks
them against its own schema.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ag_ui.core import Tool as DeclaredTool

from ..errors import InvalidArgument, PromptimusError, ToolArgumentsError, ToolExecutionError
from ..tools.run_context import RunContext
from ..tools.tool import Tool
from .refusal import Refused

__all__ = ["FrontEndTool", "answering", "front_end_tools"]

_answers: contextvars.ContextVar[_Answers | None] = contextvars.ContextVar(
    "promptimus_ag_ui_answers", default=None
)


@dataclass
class _Answers:
    """The client's results by call id, and for calls without an id (a text-protocol agent's)
    by tool name, in the order the calls were made."""

    by_id: dict[str, str]
    unnamed: dict[str, list[str]]


@contextmanager
def answering(
    results: Mapping[str, str], unnamed: Mapping[str, list[str]] | None = None
) -> Iterator[None]:
    """The client's results (call id to content; `unnamed`: tool name to the results of its
    id-less calls, in order) for the runs started inside the block."""
    token = _answers.set(
        _Answers(dict(results), {name: list(v) for name, v in (unnamed or {}).items()})
    )
    try:
        yield
    finally:
        _answers.reset(token)


class FrontEndTool(Tool):
    """A tool the client declared (`name`, `description`, `parameters` JSON schema)."""

    def __init__(self, declared: DeclaredTool) -> None:
        super().__init__(
            name=declared.name, description=declared.description, requires_approval=True
        )
        schema = declared.parameters
        if schema is not None and (
            not isinstance(schema, dict) or schema.get("type", "object") != "object"
        ):
            raise InvalidArgument(
                f"{declared.name!r}: parameters must be a JSON schema of an object "
                '({"type": "object", "properties": {...}}), or left out for a tool without '
                f"arguments; got {json.dumps(schema)[:80]}."
            )
        if not schema:
            schema = {"type": "object", "properties": {}}
        self._schema: dict[str, Any] = schema

    @property
    def origin(self) -> str:
        return "a tool of the AG-UI client"

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return self._schema

    def validate(self, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
        if arguments is None or arguments == "":
            return {}
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError as exc:
                raise ToolArgumentsError(
                    f"The arguments of {self.name!r} are not valid JSON ({exc}); send a JSON "
                    "object."
                ) from None
        if not isinstance(arguments, dict):
            raise ToolArgumentsError(f"The arguments of {self.name!r} must be a JSON object.")
        return arguments

    def handle_call(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None
    ) -> Awaitable[Any]:
        self.validate(arguments)
        return self._answer(ctx.tool_call_id if ctx is not None else None)

    async def _answer(self, call: str | None) -> str:
        answers = _answers.get()
        if answers is not None:
            if call is not None and call in answers.by_id:
                return answers.by_id[call]
            waiting = answers.unnamed.get(self.name)
            if call is None and waiting:
                return waiting.pop(0)
        raise ToolExecutionError(
            f"The client has not sent the result of this call of {self.name!r}."
        )

    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise ToolExecutionError(f"{self.name!r} is run by the AG-UI client, not here.")


def front_end_tools(declared: list[DeclaredTool], own: list[str]) -> list[FrontEndTool]:
    """The client's tools as `FrontEndTool`s; `Refused` 400 for a name no model could call or
    one of the agent's own tools already has, or parameters that are no object schema."""
    tools = []
    for item in declared:
        if item.name in own:
            raise Refused(
                400,
                f"tools: {item.name!r} is a tool the served agent has itself; give the client's "
                "tool another name.",
                "invalid_tools",
            )
        try:
            tools.append(FrontEndTool(item))
        except PromptimusError as exc:
            raise Refused(400, f"tools: {exc}", "invalid_tools") from None
    return tools
