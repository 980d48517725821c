"""`Tool`: a function or a module the model can call.

    @Tool.decorate
    def add(a: int, b: int = 1) -> int:
        '''Add two numbers.

        Args:
            a: the first number.
            b: the second number.
        '''
        return a + b

    add.to_openai()                       # {"type": "function", "function": {...}}
    await add.call('{"a": "2"}')          # "3"  (validated, run, converted to text)
    await add.forward(a=2, b=3)           # 5    (a plain call through the module call path)
    add(2, 3)                             # 5    (still the function it decorates)

A tool is a `Module`: its `description` is a tunable, checkpointed `Parameter`, and a module
wrapped with `Tool.from_module` is registered under it (`module`), so its prompts are saved with
the tool. The schema is built once per tool (see `tool_schema.py`).

Timeouts: a call the model makes (`Tool.call`, an agent's tool call, a composite's sub-call)
that does not return within the tool's `timeout` — else the caller's default, an agent's
`tool_timeout` (`DEFAULT_TOOL_TIMEOUT`, 300 s) — raises `ToolTimeout`, which an agent sends back
to the model as the tool's result. An async tool is cancelled. A sync tool runs on a daemon thread
no other call shares while it runs (see `daemon_thread.py`); Python cannot stop a thread, so a
sync tool that times out keeps running in the background until it returns, and its result is
dropped — it never keeps the run, `asyncio.run()` or the interpreter from finishing. A direct
`await tool.forward(...)` is not bounded: it is the caller's to wrap in `asyncio.timeout`.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import json
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, overload, runtime_checkable

from pydantic import Field

from .._compat_seam import CompatMethod, compat_calls
from ..core import Module, Parameter, Session
from ..core.module import wrap_as_call
from ..dto import ImageContent, Message, MessageRole
from ..errors import (
    DuplicateToolName,
    FailedToParseOutput,
    InvalidArgument,
    MaxIterExceeded,
    OutputTruncated,
    PromptimusError,
    ToolArgumentsError,
    ToolError,
    ToolExecutionError,
    ToolTimeout,
)
from . import watchdog
from .daemon_thread import run_in_daemon_thread
from .handoff import SupportsHandoff, handoff_messages
from .results import tool_result_to_text
from .run_context import RunContext
from .settings import (
    DEFAULT_TOOL_TIMEOUT,
    ApprovalCheck,
    check_idempotent,
    check_timeout,
    check_tool_name,
    snake_case,
)
from .settings import check_approval as _check_approval
from .tool_schema import (
    FunctionSchema,
    build_schema,
    parse_docstring,
    signature_parameters,
)

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "SupportsHandoff",
    "Tool",
    "ToolSource",
    "check_tool_name",
    "handoff_messages",
    "snake_case",
    "tool_items",
    "tool_result_to_text",
    "toolset",
]

# Errors a model can react to become ToolExecutionError; every other PromptimusError (no LLM set,
# provider down, bad template, exhausted test script) is the user's to fix and propagates as is.
_MODEL_FIXABLE: tuple[type[PromptimusError], ...] = (
    ToolError,
    MaxIterExceeded,
    FailedToParseOutput,
    OutputTruncated,
)


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _callable_name(fn: Any) -> str:
    while isinstance(fn, functools.partial):
        fn = fn.func
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else snake_case(type(fn).__name__)


def _is_async(fn: Any) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an async callable object
    )


def _mentions(annotation: Any, target: type) -> bool:
    if annotation is target:
        return True
    import typing

    return any(_mentions(arg, target) for arg in typing.get_args(annotation))


def _accepts(annotation: Any, kind: Any) -> bool:
    """Does `annotation` (possibly a union) accept a value of `kind` (str, list or Message)?"""
    import types
    import typing

    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(arg, kind) for arg in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _accepts(typing.get_args(annotation)[0], kind)
    if annotation is inspect.Parameter.empty or annotation is Any:
        return True
    return (origin or annotation) is kind or (kind is list and origin in (list, typing.Sequence))


@dataclass(frozen=True, slots=True)
class _ModuleInput:
    """How the model's `request` text reaches a wrapped module's forward."""

    param: str
    as_text: bool  # forward accepts a str
    as_list: bool  # forward accepts list[Message]


@dataclass(frozen=True, slots=True)
class _FunctionByName:
    module: str
    qualname: str

    def resolve(self) -> Any:
        owner: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            owner = getattr(owner, part)
        return owner._fn if isinstance(owner, Tool) else owner


def _shadowed_by(fn: Any, tool: Tool) -> bool:
    """Whether `fn` is reachable by its module and qualified name only through `tool`."""
    if not inspect.isfunction(fn) or "<locals>" in fn.__qualname__:
        return False
    owner: Any = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        owner = getattr(owner, part, None)
    return owner is tool


class Tool(Module):
    """A callable the model can use: a name, a tunable `description` and a JSON schema.

    `fn` may be sync (run on a daemon thread) or async. A parameter annotated with `RunContext`
    is injected by the agent and not shown to the model. See `Tool.from_module` for sub-agents.
    `timeout` (seconds) bounds each call the model makes; None leaves it to the caller (an
    agent's `tool_timeout`). See the module docstring for what a timeout does to a sync tool.

    `requires_approval`: True, or `fn(ctx, arguments) -> bool` (sync or async; `arguments` are
    the validated arguments by name), makes an agent pause before running such a call until a
    person approves or denies it (see `BaseAgent.run`'s `resume=` and `approvals=`).

    `idempotent` (default True) says that running a call twice with the same arguments does
    no more than running it once, so a call whose outcome is unknown (its server went away
    mid-call) may be sent again. Mark a tool with side effects `idempotent=False` (sending a
    mail, paying, appending). MCP tools take it from the server's `idempotentHint` /
    `readOnlyHint` annotations instead (False when absent, as the MCP spec says).
    """

    _schema: FunctionSchema
    _requires_approval: bool | ApprovalCheck

    server: str | None = None
    """The server the tool runs on (an MCP server's name), None for a tool run in this process.
    Run records, agent events and tracing spans carry it."""

    def __init__(
        self,
        fn: Callable[..., Any] | Module,
        name: str | None = None,
        description: str | None = None,
        module: Module | None = None,
        handoff_history: bool = False,
        handoff_include_tool_loop: bool = False,
        timeout: float | None = None,
        requires_approval: bool | ApprovalCheck = False,
        idempotent: bool = True,
    ) -> None:
        super().__init__()
        self.timeout = check_timeout(timeout, "Tool timeout")
        self.idempotent = check_idempotent(idempotent)
        self._requires_approval = _check_approval(requires_approval)
        if isinstance(fn, Module):
            module, fn = fn, fn.forward
        if not callable(fn):
            raise ToolError(f"Tool needs a function or a Module, got {type(fn).__name__}.")
        tool_name = check_tool_name(name if name is not None else _callable_name(fn))
        is_forward = (
            module is not None
            and getattr(fn, "__self__", None) is module
            and getattr(fn, "__name__", None) == "forward"
        )
        if handoff_history and not is_forward:
            raise ToolError(
                f"Tool {tool_name!r}: handoff_history only applies to a module's forward; use "
                "Tool.from_module(module, handoff_history=True)."
            )
        parameters = signature_parameters(fn, tool_name)
        docstring = inspect.getdoc(fn)
        self._input: _ModuleInput | None = None
        self._deps_param: str | None = None
        self._handoff_history = handoff_history
        self._handoff_include_tool_loop = handoff_include_tool_loop
        if is_forward:
            assert module is not None
            parameters = self._adapt_module_parameters(tool_name, module, parameters)
            docstring = _module_docstring(module)
            if handoff_history and (self._input is None or not self._input.as_list):
                raise ToolError(
                    f"Tool {tool_name!r}: handoff_history=True needs {type(module).__name__}."
                    "forward to take the conversation as a parameter annotated with list[Message]"
                    " (like the agents' `request`)."
                )
        schema = build_schema(tool_name, parameters, docstring)
        if description is None:
            description = schema.summary or (f"Ask the {tool_name} agent." if is_forward else "")
        self._name = tool_name
        self._fn = fn
        self._async = _is_async(fn)
        self._schema = schema
        self._fresh_session = is_forward
        self.description = Parameter(description)
        if module is not None:
            self.module = module

    def _adapt_module_parameters(
        self, tool: str, module: Module, parameters: list[inspect.Parameter]
    ) -> list[inspect.Parameter]:
        """A module's forward takes messages and deps; the model sends `request` text instead."""
        out: list[inspect.Parameter] = []
        for param in parameters:
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            if param.name == "deps" and self._deps_param is None:
                self._deps_param = param.name
                continue
            # the original handed the conversation to the first parameter, annotated or not
            untyped = param.annotation in (inspect.Parameter.empty, Any) and not out
            if self._input is None and (
                _mentions(param.annotation, Message) or (self._handoff_history and untyped)
            ):
                self._input = _ModuleInput(
                    param.name,
                    as_text=_accepts(param.annotation, str),
                    as_list=_accepts(param.annotation, list),
                )
                if self._handoff_history:  # the conversation is the input; a request may add to it
                    text = f"Optional: what to ask {tool}; it sees the conversation so far."
                    default: Any = ""
                else:
                    text = f"The request for {tool}, complete and self-contained."
                    default = inspect.Parameter.empty
                request = Annotated[str, Field(description=text)]
                param = inspect.Parameter(
                    "request", param.POSITIONAL_OR_KEYWORD, annotation=request, default=default
                )
            out.append(param)
        names = [p.name for p in out]
        if names.count("request") > 1:
            raise ToolError(
                f"Tool {tool!r}: {type(module).__name__}.forward has a parameter named 'request' "
                "besides its message parameter; rename one of them."
            )
        return out

    # ------------------------------------------------------------------ construction helpers

    @overload
    @classmethod
    def decorate(cls, fn: Callable[..., Any], /) -> Tool: ...

    @overload
    @classmethod
    def decorate(
        cls,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        requires_approval: bool | ApprovalCheck = False,
        idempotent: bool = True,
    ) -> Callable[[Callable[..., Any]], Tool]: ...

    @classmethod
    def decorate(
        cls,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        requires_approval: bool | ApprovalCheck = False,
        idempotent: bool = True,
    ) -> Tool | Callable[[Callable[..., Any]], Tool]:
        """`@Tool.decorate` or `@Tool.decorate(name=..., description=..., timeout=...,
        requires_approval=..., idempotent=...)`."""
        options: dict[str, Any] = {
            "name": name,
            "description": description,
            "timeout": timeout,
            "requires_approval": requires_approval,
            "idempotent": idempotent,
        }
        if fn is None:
            return lambda f: cls(f, **options)
        return cls(fn, **options)

    @classmethod
    def from_module(
        cls,
        module: Module,
        name: str | None = None,
        description: str | None = None,
        handoff_history: bool = False,
        handoff_include_tool_loop: bool = False,
        timeout: float | None = None,
        requires_approval: bool | ApprovalCheck = False,
        idempotent: bool = True,
    ) -> Tool:
        """Use a module (typically an agent) as a tool.

        The model fills in `request` (text); the module's message parameter receives it (as text,
        or as a user message), prefixed with the conversation so far when `handoff_history` is on
        (tool calls and results only with `handoff_include_tool_loop`). A `deps` parameter gets
        the parent's `ctx.deps`. Each call runs in a fresh `Session`, so the module starts from
        empty memory, and the parent model sees only the answer as text.

        The name defaults to the class name in snake case (`WeatherAgent` -> `weather_agent`);
        pass `name=` when two tools would share it.
        """
        if not isinstance(module, Module):
            raise ToolError(f"Tool.from_module needs a Module, got {type(module).__name__}.")
        return cls(
            module.forward,
            name=name if name is not None else snake_case(type(module).__name__),
            description=description,
            module=module,
            handoff_history=handoff_history,
            handoff_include_tool_loop=handoff_include_tool_loop,
            timeout=timeout,
            requires_approval=requires_approval,
            idempotent=idempotent,
        )

    @classmethod
    def from_mcp(cls, toolset: Any, name: str) -> Tool:
        """One tool of an open `promptimus.mcp.MCPToolset`, by its name as the model sees it
        (with the toolset's prefix). Raises `MCPError` if the server has no such tool."""
        return toolset.tool(name)  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ what the agent reads

    @property
    def name(self) -> str:
        return self._name

    @property
    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (shared: do not mutate)."""
        return self._schema.parameters

    def _init_without_function(
        self, name: str, timeout: float | None, what: str = "Tool timeout"
    ) -> None:
        """`__init__` for a subclass that runs no Python function of its own (a composite, an
        MCP server's tool): the name and timeout, every function-related setting off. The
        subclass then sets `_schema` (or overrides `parameters_schema`) and `description`."""
        Module.__init__(self)
        self._name = check_tool_name(name)
        self.timeout = check_timeout(timeout, what)
        self.idempotent = True
        self._requires_approval = False
        self._fn = None
        self._async = True
        self._fresh_session = False
        self._input = None
        self._deps_param = None
        self._handoff_history = False
        self._handoff_include_tool_loop = False

    @property
    def requires_approval(self) -> bool | ApprovalCheck:
        """True, False, or the function that decides per call (see the class docstring)."""
        return self._requires_approval

    @property
    def may_need_approval(self) -> bool:
        """Whether any call of this tool can need approval (agents skip the check otherwise)."""
        return self._requires_approval is not False

    async def needs_approval(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None = None
    ) -> bool:
        """Whether this call (the model's arguments, JSON text or dict) must wait for approval.

        Arguments that fail validation never need it: such a call runs nothing and its error
        goes back to the model. A `requires_approval` function must return a bool (a function
        that forgets to return would otherwise let every call through)."""
        check = self._requires_approval
        if check is False:
            return False
        try:
            values = self._schema.validate(arguments, self._name)
        except ToolArgumentsError:
            return False
        if check is True:
            return True
        answer = check(ctx if ctx is not None else RunContext(), values)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, bool):
            raise InvalidArgument(
                f"Tool {self._name!r}: its requires_approval function returned "
                f"{type(answer).__name__}; it must return True (ask a person) or False (run)."
            )
        return answer

    @property
    def handoff_history(self) -> bool:
        """Whether a module tool hands the conversation so far to its module."""
        return self._handoff_history

    @property
    def is_module_tool(self) -> bool:
        return self._fresh_session

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI `tools=[...]` entry."""
        function: dict[str, Any] = {"name": self._name}
        if self.description.value:
            function["description"] = self.description.value
        function["parameters"] = self.parameters_schema
        return {"type": "function", "function": function}

    to_openai_function = CompatMethod("tools:to_openai_function")

    def describe_for_prompt(self) -> str:
        """A plain-text description for text protocols (ReACT)."""
        schema = json.dumps(self.parameters_schema, ensure_ascii=False, separators=(",", ":"))
        head = f"{self._name}: {self.description.value}" if self.description.value else self._name
        return f"{head}\n  Arguments (JSON schema): {schema}"

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_bind_signature", None)
        fn = state.get("_fn")
        if _shadowed_by(fn, self):
            # `@Tool.decorate` put this tool where the function was, so pickle (which finds
            # functions by name) would find the tool: send the name and take the function back
            # from the tool found there on unpickling.
            state["_fn"] = _FunctionByName(fn.__module__, fn.__qualname__)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        fn = state.get("_fn")
        if isinstance(fn, _FunctionByName):
            state = {**state, "_fn": fn.resolve()}
        super().__setstate__(state)

    def extra_repr(self) -> str:
        timeout = f", timeout={self.timeout:g}" if self.timeout is not None else ""
        approval = ", requires_approval" if self._requires_approval is not False else ""
        once = ", idempotent=False" if not self.idempotent else ""
        return f"name={self._name!r}{timeout}{approval}{once}"

    # ------------------------------------------------------------------ calling

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function directly, as if it had not been decorated: `add(2, 3)`
        returns 5, and an `async def` returns its coroutine (as in the original promptimus).
        `await tool.forward(...)` is the module call path (hooks, tracing, fresh session)."""
        if self._fn is None:  # a tool without a function of its own (CompositeTool)
            return self.forward(*args, **kwargs)
        return self._fn(*args, **kwargs)

    @compat_calls("tools:json_object_call")
    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function and return its raw result.

        Takes Python arguments, validated and coerced by the same schema as the model's JSON
        (the same `ToolArgumentsError` for bad ones); a module tool's forward takes the module's.
        """
        if self._fn is not None and not self._fresh_session:
            args, kwargs = self._checked(args, kwargs)
        return await self._invoke(*args, **kwargs)

    def _checked(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...] | list[Any], dict[str, Any]]:
        """Python arguments validated and coerced by the same schema as the model's JSON (the
        same `ToolArgumentsError` for bad ones); `RunContext` and variadic arguments pass."""
        signature = self._signature()
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:  # missing or unknown: let the schema word it, as for JSON
            bound = signature.bind_partial()
            named = [p for p in signature.parameters.values() if p.kind not in _VARIADIC]
            bound.arguments.update(zip((p.name for p in named), args, strict=False))
            values = {**bound.arguments, **kwargs}
            self._schema.validate(values, self._name)
            raise ToolArgumentsError(f"Tool {self._name!r}: {exc}.") from None
        context = self._schema.context_params
        given = {
            name: value
            for name, value in bound.arguments.items()
            if name not in context and signature.parameters[name].kind not in _VARIADIC
        }
        values = self._schema.validate(given, self._name)
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        by_position = any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values())
        for name, param in signature.parameters.items():
            if param.kind is param.VAR_POSITIONAL:
                positional.extend(bound.arguments.get(name, ()))
            elif param.kind is param.VAR_KEYWORD:
                keywords.update(bound.arguments.get(name, {}))
            elif name in values or name in bound.arguments:
                value = values[name] if name in values else bound.arguments[name]
                if param.kind is param.POSITIONAL_ONLY or (
                    by_position and param.kind is param.POSITIONAL_OR_KEYWORD
                ):
                    positional.append(value)
                else:
                    keywords[name] = value
        return positional, keywords

    def _signature(self) -> inspect.Signature:
        """The function's signature, for binding Python arguments (read once, not pickled)."""
        signature = self.__dict__.get("_bind_signature")
        if signature is None:
            signature = inspect.signature(self._fn)  # type: ignore[arg-type]
            self._bind_signature = signature
        return signature

    async def _invoke(self, *args: Any, **kwargs: Any) -> Any:
        if self._fresh_session:
            with Session():
                return await self._fn(*args, **kwargs)
        if self._async:
            return await self._fn(*args, **kwargs)
        result = await run_in_daemon_thread(self._fn, *args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    async def call(
        self,
        arguments: str | dict[str, Any] | None,
        ctx: RunContext[Any] | None = None,
        *,
        default_timeout: float | None = None,
    ) -> str:
        """Run the tool as the model asked: validate `arguments` (JSON text or dict), inject the
        context, run, and return the result as text.

        `default_timeout` (seconds) applies when the tool has no `timeout` of its own (an agent
        passes its `tool_timeout`). Raises `ToolArgumentsError` (bad JSON / invalid or missing
        arguments), `ToolExecutionError` (the function raised; the exception is the
        `__cause__`) and its subclass `ToolTimeout`, all with messages meant for the model.
        """
        return tool_result_to_text(await self._run(arguments, ctx, default_timeout))

    async def call_with_images(
        self,
        arguments: str | dict[str, Any] | None,
        ctx: RunContext[Any] | None = None,
        *,
        default_timeout: float | None = None,
    ) -> tuple[str, tuple[ImageContent, ...]]:
        """`call`, plus the images the result carries: a tool (an MCP tool, or a function of
        yours) that returns a `Message` with `images` hands them to the agent, which shows them
        to the model (see the agents' docstrings for how)."""
        result = await self._run(arguments, ctx, default_timeout)
        images = tuple(result.images) if isinstance(result, Message) and result.images else ()
        return tool_result_to_text(result), images

    def prepare(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None = None
    ) -> tuple[list[Any], dict[str, Any]]:
        """Validated Python arguments for the function, from the model's arguments."""
        values = self._schema.validate(arguments, self._name)
        if self._schema.context_params:
            context = ctx if ctx is not None else RunContext()
            for name in self._schema.context_params:
                values[name] = context
        if self._input is not None:
            request = values.pop("request", "")
            values[self._input.param] = self._module_input(request, ctx)
        if self._deps_param is not None and ctx is not None and ctx.deps is not None:
            values[self._deps_param] = ctx.deps
        return self._schema.split(values)

    def _run(
        self,
        arguments: str | dict[str, Any] | None,
        ctx: RunContext[Any] | None,
        default_timeout: float | None = None,
    ) -> Awaitable[Any]:
        """The tool's run for `await`: a plain function handing back `_bounded`'s coroutine, so
        a call holds no extra frame for its whole length (bad arguments raise right here)."""
        args, kwargs = self.prepare(arguments, ctx)
        return self._bounded(self._execute(args, kwargs), default_timeout)

    async def _bounded(self, work: Coroutine[Any, Any, Any], default: float | None) -> Any:
        """Await `work` within this tool's timeout (else `default`); `ToolTimeout` past it."""
        limit = self.timeout if self.timeout is not None else default
        if limit is None:
            return await work
        # the watchdog thread's deadline, not `asyncio.timeout`: no loop timer per call (see
        # tools/watchdog.py for what a pending loop timer costs a call that waits on a server)
        deadline = watchdog.arm(limit)
        try:
            return await work
        except asyncio.CancelledError:
            if not deadline.expired():  # a cancellation from outside: let it through
                raise
            raise ToolTimeout(
                f"Tool {self._name!r} did not return within {_seconds(limit)} and was abandoned. "
                "Try again with a smaller request, or do without this tool."
            ) from None
        finally:
            deadline.disarm()

    async def _execute(self, args: list[Any], kwargs: dict[str, Any]) -> Any:
        try:
            if type(self).forward is _TOOL_FORWARD:  # validated already: not a second time
                return await _forward_validated(self, *args, **kwargs)
            return await self.forward(*args, **kwargs)
        except _MODEL_FIXABLE as exc:
            raise ToolExecutionError(f"Tool {self._name!r} failed: {exc}") from exc
        except PromptimusError:
            raise
        except Exception as exc:
            raise ToolExecutionError(
                f"Tool {self._name!r} failed: {type(exc).__name__}: {exc}"
            ) from exc

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


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)

_TOOL_FORWARD = Tool.forward
# A model's call, whose arguments `prepare` validated: the module call path (hooks, tracing)
# around the function without `forward`'s validation of Python arguments.
_forward_validated = wrap_as_call(Tool._invoke)


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


@runtime_checkable
class ToolSource(Protocol):
    """Something that stands for several tools wherever tools are taken (an MCP server's
    toolset): `toolset()` expands it into the `Tool`s it returns."""

    def expand_tools(self) -> Iterable[Tool]: ...


def _origin(tool: Tool) -> str:
    """Where a tool comes from, for error messages: a remote tool names its server."""
    return getattr(tool, "origin", None) or "a local tool"


def tool_items(
    tools: Iterable[Tool | Module | Callable[..., Any] | ToolSource],
) -> list[Tool | ToolSource]:
    """Each item as a `Tool` (plain functions become `Tool(fn)`, modules
    `Tool.from_module(module)`), a `ToolSource` (an MCP toolset) kept as it is: what an agent
    keeps to read its sources again without making its local tools anew."""
    out: list[Tool | ToolSource] = []
    for item in tools:
        if isinstance(item, Tool | ToolSource):
            out.append(item)
        elif isinstance(item, Module):
            out.append(Tool.from_module(item))
        else:
            out.append(Tool(item))
    return out


def toolset(tools: Iterable[Tool | Module | Callable[..., Any] | ToolSource]) -> dict[str, Tool]:
    """Name -> Tool, refusing two tools with the same name. Plain functions become `Tool(fn)`,
    modules `Tool.from_module(module)`, and a `ToolSource` (an MCP toolset) its tools."""
    out: dict[str, Tool] = {}
    for item in tool_items(tools):
        expanded = [item] if isinstance(item, Tool) else list(item.expand_tools())
        for tool in expanded:
            if tool.name in out:
                raise DuplicateToolName(
                    f"Two tools are named {tool.name!r} ({_origin(out[tool.name])} and "
                    f"{_origin(tool)}). Tool names must be unique: give one a distinct name, "
                    "e.g. Tool.from_module(module, name='...'), Tool(fn, name='...') or an MCP "
                    "toolset's prefix='...'."
                )
            out[tool.name] = tool
    return out
