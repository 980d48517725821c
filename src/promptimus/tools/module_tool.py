"""`ModuleTool`: a module's forward as a tool, typically a sub-agent (`Tool.from_module(m)`).

The model sends `request` text where the module's forward takes messages: the parameter that
mentions `Message` (with `handoff_history`, also an unannotated first parameter) receives it as
text, a user message or a list of messages, whichever it accepts, after the conversation so far
when `handoff_history` is on. A `deps` parameter gets the parent's `ctx.deps` and is hidden from
the model, as are `*args` and `**kwargs`. Each call runs in a fresh `Session`, so the module
starts from empty memory. The wrapped module is registered under the tool (`module`), so its
prompts are saved with the tool.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Annotated, Any

from pydantic import Field

from .._compat_seam import compat_calls
from ..core import Module, Session
from ..core.module import wrap_as_call
from ..dto import Message, MessageRole
from ..errors import ToolArgumentsError, ToolError
from .base import Tool, is_forward_of
from .failures import reporting_failures
from .handoff import handoff_messages
from .run_context import RunContext
from .settings import ApprovalCheck, check_tool_name
from .tool_schema import (
    FunctionSchema,
    SchemaChecked,
    build_schema,
    parse_docstring,
    signature_parameters,
)

__all__ = ["ModuleTool"]


@dataclass(frozen=True, slots=True)
class _ModuleInput:
    """How the model's `request` text reaches a wrapped module's forward."""

    param: str
    as_text: bool  # forward accepts a str
    as_list: bool  # forward accepts list[Message]


class ModuleTool(SchemaChecked, Tool, built_by_tool="module"):
    """A module the model can call with a `request` (see the module docstring and
    `Tool.from_module`, which names it after the module's class)."""

    _schema: FunctionSchema

    def __init__(
        self,
        fn: Module | Any,
        name: str | None = None,
        description: str | None = None,
        module: Module | None = None,
        handoff_history: bool = False,
        handoff_include_tool_loop: bool = False,
        timeout: float | None = None,
        requires_approval: bool | ApprovalCheck = False,
        idempotent: bool = True,
    ) -> None:
        if isinstance(fn, Module):
            module, fn = fn, fn.forward
        if module is None or not is_forward_of(fn, module):
            raise ToolError("ModuleTool wraps a module: ModuleTool(module) or Tool.from_module.")
        tool_name = check_tool_name(name if name is not None else fn.__name__)
        parameters, given, deps = _module_parameters(
            tool_name, module, signature_parameters(fn, tool_name), handoff_history
        )
        if handoff_history and (given is None or not given.as_list):
            raise ToolError(
                f"Tool {tool_name!r}: handoff_history=True needs {type(module).__name__}."
                "forward to take the conversation as a parameter annotated with list[Message]"
                " (like the agents' `request`)."
            )
        schema = build_schema(tool_name, parameters, _module_docstring(module))
        if description is None:
            description = schema.summary or f"Ask the {tool_name} agent."
        super().__init__(
            name=tool_name,
            description=description,
            timeout=timeout,
            requires_approval=requires_approval,
            idempotent=idempotent,
        )
        self._fn = fn
        self._schema = schema
        self._input = given
        self._deps_param = deps
        self._handoff_history = handoff_history
        self._handoff_include_tool_loop = handoff_include_tool_loop
        self.module = module

    @property
    def handoff_history(self) -> bool:
        """Whether the module gets the conversation so far (`Tool.from_module`)."""
        return self._handoff_history

    @property
    def function(self) -> Any:
        """The module's forward, which the tool calls."""
        return self._fn

    def prepare(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None = None
    ) -> tuple[Sequence[Any], dict[str, Any]]:
        """The forward's Python arguments for the model's `arguments`: the request as the
        module's input (after the conversation `ctx` holds, with `handoff_history`), the parent's
        deps, the context where the forward asks for it."""
        values = self._schema.validate(arguments, self._name)
        if self._schema.context_params:
            context = ctx if ctx is not None else RunContext()
            for name in self._schema.context_params:
                values[name] = context
        if self._input is not None:
            values[self._input.param] = self._module_input(values.pop("request", ""), ctx)
        if self._deps_param is not None and ctx is not None and ctx.deps is not None:
            values[self._deps_param] = ctx.deps
        return self._schema.split(values)

    def handle_call(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None
    ) -> Awaitable[Any]:
        args, kwargs = self.prepare(arguments, ctx)
        if type(self).forward is _FORWARD:  # prepared already: not read a second time
            return reporting_failures(self._name, self._call_prepared(*args, **kwargs))
        return reporting_failures(self._name, self.forward(*args, **kwargs))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The module's forward, called directly (its coroutine, outside a fresh session)."""
        return self._fn(*args, **kwargs)

    @compat_calls("tools:json_object_call")
    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Call the module's forward with its own arguments, in a fresh `Session`."""
        return await self._invoke(*args, **kwargs)

    async def _invoke(self, *args: Any, **kwargs: Any) -> Any:
        with Session():
            return await self._fn(*args, **kwargs)

    # A model's call, prepared by `prepare`: the module call path (hooks, tracing) around the
    # module's forward.
    _call_prepared = wrap_as_call(_invoke)

    def _module_input(self, request: str, ctx: RunContext[Any] | None) -> Any:
        assert self._input is not None
        if self._handoff_history:
            view = (ctx.handoff_view if ctx else None) or handoff_messages
            history = view(ctx.messages, self._handoff_include_tool_loop) if ctx else []
            asked = [Message(role=MessageRole.USER, content=request)] if request else []
            if not history and not asked:
                raise ToolArgumentsError(
                    f"Tool {self._name!r} got no request and there is no conversation to hand "
                    "off; send a request."
                )
            return [*history, *asked]
        if self._input.as_text:
            return request
        message = Message(role=MessageRole.USER, content=request)
        return [message] if self._input.as_list else message


_FORWARD = ModuleTool.forward


def _module_parameters(
    tool: str, module: Module, parameters: list[inspect.Parameter], handoff_history: bool
) -> tuple[list[inspect.Parameter], _ModuleInput | None, str | None]:
    """The forward's parameters as the model sees them (`request` text in place of the
    messages; no deps, no variadics), the input parameter and the deps parameter."""
    out: list[inspect.Parameter] = []
    given: _ModuleInput | None = None
    deps: str | None = None
    for param in parameters:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.name == "deps" and deps is None:
            deps = param.name
            continue
        # with handoff_history, a first parameter without annotation takes the conversation
        untyped = param.annotation in (inspect.Parameter.empty, Any) and not out
        if given is None and (
            _mentions(param.annotation, Message) or (handoff_history and untyped)
        ):
            given = _ModuleInput(
                param.name,
                as_text=_accepts(param.annotation, str),
                as_list=_accepts(param.annotation, list),
            )
            param = _request_parameter(tool, handoff_history)
        out.append(param)
    if [p.name for p in out].count("request") > 1:
        raise ToolError(
            f"Tool {tool!r}: {type(module).__name__}.forward has a parameter named 'request' "
            "besides its message parameter; rename one of them."
        )
    return out, given, deps


def _request_parameter(tool: str, handoff_history: bool) -> inspect.Parameter:
    if handoff_history:  # the conversation is the input; a request may add to it
        text = f"Optional: what to ask {tool}; it sees the conversation so far."
        default: Any = ""
    else:
        text = f"The request for {tool}, complete and self-contained."
        default = inspect.Parameter.empty
    return inspect.Parameter(
        "request",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        annotation=Annotated[str, Field(description=text)],
        default=default,
    )


def _mentions(annotation: Any, target: type) -> bool:
    if annotation is target:
        return True
    return any(_mentions(arg, target) for arg in typing.get_args(annotation))


def _accepts(annotation: Any, kind: Any) -> bool:
    """Does `annotation` (possibly a union) accept a value of `kind` (str, list or Message)?"""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, UnionType):
        return any(_accepts(arg, kind) for arg in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _accepts(typing.get_args(annotation)[0], kind)
    if annotation is inspect.Parameter.empty or annotation is Any:
        return True
    return (origin or annotation) is kind or (kind is list and origin in (list, typing.Sequence))


def _own_doc(obj: Any) -> str | None:
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) and doc.strip() else None


def _module_docstring(module: Module) -> str | None:
    """The docstring describing a module used as a tool: its forward's (for the summary and the
    argument descriptions), else its class's summary. Docstrings of promptimus' own classes
    describe the class, not the job the user gave it, so they are never used."""
    cls = type(module)
    owner = next((k for k in cls.__mro__ if "forward" in k.__dict__), cls)
    forward_doc = None if _builtin(owner) else _own_doc(owner.__dict__["forward"])
    class_doc = None if _builtin(cls) else _own_doc(cls)
    if forward_doc and parse_docstring(forward_doc).summary:
        return forward_doc
    summary = parse_docstring(class_doc).summary
    if not summary:
        return forward_doc
    return f"{summary}\n\n{forward_doc}" if forward_doc else summary


def _builtin(cls: type) -> bool:
    return cls.__module__ == "promptimus" or cls.__module__.startswith("promptimus.")
