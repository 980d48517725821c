"""`Tool`: what every tool is to an agent, and the base each kind of tool implements.

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

Kinds of tool, each in a file of its own: `FunctionTool` (a Python function: `Tool(fn)`,
`@Tool.decorate`), `ModuleTool` (a module's forward, e.g. a sub-agent: `Tool.from_module(m)`),
`CompositeTool` (a batch of sub-tool calls in one call) and `promptimus.mcp.MCPTool` (a tool of
an MCP server). `Tool(...)` builds a function or a module tool, the way `pathlib.Path(...)`
builds the path class of the system it runs on. Agents use only what this base defines.

A new kind subclasses `Tool`, calls `super().__init__(name=..., description=..., ...)` and
implements `parameters_schema`, `validate`, `handle_call` (the model's call) and `forward` (a
direct call, through the module call path: hooks, tracing).

A tool is a `Module`: its `description` is a tunable, checkpointed `Parameter`.

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
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, Self, cast, overload

from .._compat_seam import CompatMethod
from ..core import Module, Parameter
from ..dto import ImageContent, Message
from ..errors import InvalidArgument, ToolArgumentsError, ToolError, ToolTimeout
from . import watchdog
from .results import tool_result_to_text
from .run_context import RunContext
from .settings import (
    ApprovalCheck,
    check_approval,
    check_idempotent,
    check_timeout,
    check_tool_name,
    snake_case,
)

__all__ = ["Tool"]

_KINDS: dict[str, type[Tool]] = {}
"""The kinds `Tool(...)` builds: "function" and "module" (registered by their classes)."""


class Tool(Module):
    """A callable the model can use: a name, a tunable `description` and a JSON schema.

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

    _name: str
    _requires_approval: bool | ApprovalCheck

    def __init_subclass__(cls, *, built_by_tool: str | None = None, **kwargs: Any) -> None:
        """`built_by_tool="function"` / `"module"`: the kind `Tool(...)` builds for such a call."""
        super().__init_subclass__(**kwargs)
        if built_by_tool is not None:
            _KINDS[built_by_tool] = cls

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        kind: type[Tool] = cls
        if cls is Tool:
            name = "module" if _wraps_module(args, kwargs) else "function"
            if name not in _KINDS:
                raise ToolError(
                    f"Tool(...) builds a {name} tool, whose class is not loaded: import Tool "
                    "from promptimus.tools."
                )
            kind = _KINDS[name]
        return cast(Self, object.__new__(kind))

    # `Tool(fn, ...)` as callers write it runs the __init__ of the kind `__new__` picked
    # (FunctionTool or ModuleTool); the keyword form is a kind's `super().__init__(...)`.
    @overload
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
    ) -> None: ...

    @overload
    def __init__(
        self,
        *,
        name: str,
        description: str = "",
        timeout: float | None = None,
        requires_approval: bool | ApprovalCheck = False,
        idempotent: bool = True,
    ) -> None: ...

    def __init__(
        self,
        *function_form: Any,
        name: str | None = None,
        description: str | None = "",
        timeout: float | None = None,
        requires_approval: bool | ApprovalCheck = False,
        idempotent: bool = True,
        **function_options: Any,
    ) -> None:
        if function_form or function_options:
            raise ToolError(
                f"{type(self).__name__}.__init__ must call super().__init__(name=..., "
                "description=..., ...) with keywords (Tool(fn, ...) builds a FunctionTool)."
            )
        super().__init__()
        self._name = check_tool_name(name)
        self.timeout = check_timeout(timeout, f"{type(self).__name__} timeout")
        self.idempotent = check_idempotent(idempotent)
        self._requires_approval = check_approval(requires_approval)
        self.description = Parameter(description or "")

    # ------------------------------------------------------------------ building tools

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
        """Use a module (typically an agent) as a tool (a `ModuleTool`).

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
        return _KINDS["module"](
            module,
            name=name if name is not None else snake_case(type(module).__name__),
            description=description,
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

    # ------------------------------------------------------------------ what a kind implements

    @property
    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (shared: do not mutate)."""
        raise NotImplementedError(f"{type(self).__name__} must define parameters_schema.")

    def validate(self, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
        """The model's arguments (JSON text or dict) checked against the schema, by name; a
        `ToolArgumentsError` written for the model if they do not fit. Runs nothing."""
        raise NotImplementedError(f"{type(self).__name__} must define validate().")

    def handle_call(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None
    ) -> Awaitable[Any]:
        """The model's call: check `arguments` now (`ToolArgumentsError` before anything runs)
        and return what runs it, to await for the raw result. Failures the model should read
        are `ToolError`s (`ToolExecutionError` for an exception inside the tool); `run` bounds
        the call by the timeout, `call` turns the result into text."""
        raise NotImplementedError(f"{type(self).__name__} must define handle_call().")

    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define forward().")

    # ------------------------------------------------------------------ what the agent reads

    @property
    def name(self) -> str:
        return self._name

    @property
    def server(self) -> str | None:
        """The server the tool runs on (an MCP server's name), None for a tool run in this
        process. Run records, agent events and tracing spans carry it."""
        return None

    @property
    def origin(self) -> str:
        """Where the tool comes from, for error messages (a remote tool names its server)."""
        return "a local tool"

    @property
    def model_description(self) -> str:
        """The description the model reads: the tunable `description` (a composite adds one
        line per sub-tool)."""
        return self.description.value

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI `tools=[...]` entry."""
        function: dict[str, Any] = {"name": self._name}
        description = self.model_description
        if description:
            function["description"] = description
        function["parameters"] = self.parameters_schema
        return {"type": "function", "function": function}

    def describe_for_prompt(self) -> str:
        """A plain-text description for text protocols (ReACT)."""
        schema = json.dumps(self.parameters_schema, ensure_ascii=False, separators=(",", ":"))
        description = self.model_description
        head = f"{self._name}: {description}" if description else self._name
        return f"{head}\n  Arguments (JSON schema): {schema}"

    def extra_repr(self) -> str:
        timeout = f", timeout={self.timeout:g}" if self.timeout is not None else ""
        approval = ", requires_approval" if self._requires_approval is not False else ""
        once = ", idempotent=False" if not self.idempotent else ""
        return f"name={self._name!r}{timeout}{approval}{once}"

    to_openai_function = CompatMethod("tools:to_openai_function")

    # ------------------------------------------------------------------ approval

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
            values = self.validate(arguments)
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

    # ------------------------------------------------------------------ the model's call

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
        return tool_result_to_text(await self.run(arguments, ctx, default_timeout=default_timeout))

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
        result = await self.run(arguments, ctx, default_timeout=default_timeout)
        images = tuple(result.images) if isinstance(result, Message) and result.images else ()
        return tool_result_to_text(result), images

    def run(
        self,
        arguments: str | dict[str, Any] | None,
        ctx: RunContext[Any] | None = None,
        *,
        default_timeout: float | None = None,
    ) -> Awaitable[Any]:
        """The model's call with its raw result, within the tool's timeout (else
        `default_timeout`). A plain function handing back the bounded coroutine, so a call holds
        no extra frame for its whole length (bad arguments raise right here)."""
        return self._bounded(self.handle_call(arguments, ctx), default_timeout, ctx)

    async def _bounded(
        self, work: Awaitable[Any], default: float | None, ctx: RunContext[Any] | None = None
    ) -> Any:
        """Await `work` within this tool's timeout (else `default`); `ToolTimeout` past it.
        While it runs, `ctx` is the current tool call (see `current_tool_call`)."""
        token = None if ctx is None else ctx.entered()
        limit = self.timeout if self.timeout is not None else default
        # the watchdog thread's deadline, not `asyncio.timeout`: no loop timer per call (see
        # tools/watchdog.py for what a pending loop timer costs a call that waits on a server)
        deadline = None if limit is None else watchdog.arm(limit)
        try:
            return await work
        except asyncio.CancelledError:
            if deadline is None or not deadline.expired():  # cancelled from outside: let it be
                raise
            raise ToolTimeout(
                f"Tool {self._name!r} did not return within {limit:g} s and was abandoned. "
                "Try again with a smaller request, or do without this tool."
            ) from None
        finally:
            if deadline is not None:
                deadline.disarm()
            RunContext.left(token)


def _wraps_module(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether `Tool(*args, **kwargs)` wraps a module's forward (a module tool): `Tool(module)`
    or `Tool(module.forward, module=module)`."""
    fn = args[0] if args else kwargs.get("fn")
    module = args[3] if len(args) > 3 else kwargs.get("module")
    return isinstance(fn, Module) or (module is not None and is_forward_of(fn, module))


def is_forward_of(fn: Any, module: Module) -> bool:
    """Whether `fn` is `module.forward`, bound to `module`."""
    return getattr(fn, "__self__", None) is module and getattr(fn, "__name__", None) == "forward"
