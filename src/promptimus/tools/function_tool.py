"""`FunctionTool`: a Python function as a tool (`Tool(fn)`, `@Tool.decorate`).

The schema is built once per tool from the function's signature and docstring (see
`tool_schema.py`), and the same schema validates the model's JSON (`call`) and the Python
arguments of a direct `await tool.forward(...)`, so both coerce alike and fail with the same
`ToolArgumentsError`. `tool(...)` is still the function it wraps.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .._compat_seam import compat_calls
from ..core import Module
from ..core.module import wrap_as_call
from ..errors import ToolArgumentsError, ToolError
from .base import Tool
from .daemon_thread import run_in_daemon_thread
from .failures import reporting_failures
from .pickling import FunctionByName, shadowed_by
from .run_context import RunContext
from .settings import ApprovalCheck, check_tool_name, snake_case
from .tool_schema import FunctionSchema, SchemaChecked, build_schema, signature_parameters

__all__ = ["FunctionTool"]

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


class FunctionTool(SchemaChecked, Tool, built_by_tool="function"):
    """A function the model can call: `fn` may be sync (run on a daemon thread) or async.

    A parameter annotated with `RunContext` is injected by the agent and not shown to the model.
    `module=` registers a module the function uses under the tool (`module`), so its prompts
    are saved with it. The other arguments are `Tool`'s (see there); the handoff options only
    apply to a module's forward (`Tool.from_module`).
    """

    _schema: FunctionSchema

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        description: str | None = None,
        module: Module | None = None,
        handoff_history: bool = False,
        handoff_include_tool_loop: bool = False,
        timeout: float | None = None,
        requires_approval: bool | ApprovalCheck = False,
        idempotent: bool = True,
    ) -> None:
        if not callable(fn):
            raise ToolError(f"Tool needs a function or a Module, got {type(fn).__name__}.")
        tool_name = check_tool_name(name if name is not None else _callable_name(fn))
        if handoff_history:
            raise ToolError(
                f"Tool {tool_name!r}: handoff_history only applies to a module's forward; use "
                "Tool.from_module(module, handoff_history=True)."
            )
        schema = build_schema(tool_name, signature_parameters(fn, tool_name), inspect.getdoc(fn))
        super().__init__(
            name=tool_name,
            description=schema.summary if description is None else description,
            timeout=timeout,
            requires_approval=requires_approval,
            idempotent=idempotent,
        )
        self._fn = fn
        self._async = _is_async(fn)
        self._schema = schema
        if module is not None:
            self.module = module

    @property
    def function(self) -> Callable[..., Any]:
        """The function the tool wraps."""
        return self._fn

    def prepare(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None = None
    ) -> tuple[Sequence[Any], dict[str, Any]]:
        """The function's Python arguments for the model's `arguments` (validated, the context
        injected where the function asks for it)."""
        values = self._schema.validate(arguments, self._name)
        if self._schema.context_params:
            context = ctx if ctx is not None else RunContext()
            for name in self._schema.context_params:
                values[name] = context
        return self._schema.split(values)

    def handle_call(
        self, arguments: str | dict[str, Any] | None, ctx: RunContext[Any] | None
    ) -> Awaitable[Any]:
        args, kwargs = self.prepare(arguments, ctx)
        if type(self).forward is _FORWARD:  # validated already: not a second time
            return reporting_failures(self._name, self._call_validated(*args, **kwargs))
        return reporting_failures(self._name, self.forward(*args, **kwargs))

    # ------------------------------------------------------------------ direct calls

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function directly, as if it had not been decorated: `add(2, 3)`
        returns 5, and an `async def` returns its coroutine (as in the original promptimus).
        `await tool.forward(...)` is the module call path (hooks, tracing)."""
        return self._fn(*args, **kwargs)

    @compat_calls("tools:json_object_call")
    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function with Python arguments, validated and coerced by the same
        schema as the model's JSON (the same `ToolArgumentsError` for bad ones), and return its
        raw result. `RunContext` and variadic arguments pass as given."""
        call_args, call_kwargs = self._python_arguments(args, kwargs)
        return await self._invoke(*call_args, **call_kwargs)

    def _python_arguments(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Sequence[Any], dict[str, Any]]:
        signature = self._signature()
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:  # missing or unknown: let the schema word it, as for JSON
            named = [p.name for p in signature.parameters.values() if p.kind not in _VARIADIC]
            self._schema.validate({**dict(zip(named, args, strict=False)), **kwargs}, self._name)
            raise ToolArgumentsError(f"Tool {self._name!r}: {exc}.") from None
        context = self._schema.context_params
        given = {
            name: value
            for name, value in bound.arguments.items()
            if name not in context and signature.parameters[name].kind not in _VARIADIC
        }
        values = self._schema.validate(given, self._name)
        return _arranged(signature, bound.arguments, values)

    def _signature(self) -> inspect.Signature:
        """The function's signature, for binding Python arguments (read once, not pickled)."""
        signature = self.__dict__.get("_bind_signature")
        if signature is None:
            signature = inspect.signature(self._fn)
            self._bind_signature = signature
        return signature

    async def _invoke(self, *args: Any, **kwargs: Any) -> Any:
        if self._async:
            return await self._fn(*args, **kwargs)
        result = await run_in_daemon_thread(self._fn, *args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result

    # A model's call, whose arguments `prepare` validated: the module call path (hooks, tracing)
    # around the function without `forward`'s reading of Python arguments.
    _call_validated = wrap_as_call(_invoke)

    # ------------------------------------------------------------------ pickling

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.pop("_bind_signature", None)
        fn = state["_fn"]
        if shadowed_by(fn, self):  # `@Tool.decorate` took the function's place: send its name
            state["_fn"] = FunctionByName(fn.__module__, fn.__qualname__)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        fn = state.get("_fn")
        if isinstance(fn, FunctionByName):
            found = fn.resolve()
            state = {**state, "_fn": found._fn if isinstance(found, FunctionTool) else found}
        super().__setstate__(state)


_FORWARD = FunctionTool.forward


def _arranged(
    signature: inspect.Signature, bound: dict[str, Any], values: dict[str, Any]
) -> tuple[list[Any], dict[str, Any]]:
    """The call's arguments with the validated `values` in place of what was given: positional
    where the function takes them so (or where a `*args` follows), else by keyword."""
    positional: list[Any] = []
    keywords: dict[str, Any] = {}
    by_position = any(p.kind is p.VAR_POSITIONAL for p in signature.parameters.values())
    for name, param in signature.parameters.items():
        if param.kind is param.VAR_POSITIONAL:
            positional.extend(bound.get(name, ()))
        elif param.kind is param.VAR_KEYWORD:
            keywords.update(bound.get(name, {}))
        elif name in values or name in bound:
            value = values[name] if name in values else bound[name]
            if param.kind is param.POSITIONAL_ONLY or (
                by_position and param.kind is param.POSITIONAL_OR_KEYWORD
            ):
                positional.append(value)
            else:
                keywords[name] = value
    return positional, keywords


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
