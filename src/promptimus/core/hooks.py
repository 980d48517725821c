"""The call path every `forward` goes through, and the hooks that plug into it.

Per-module hooks (like PyTorch):
- forward pre-hook  `hook(module, args, kwargs) -> None | (args, kwargs)`
- forward hook      `hook(module, args, kwargs, output) -> None | new_output`
Hooks may be plain functions or coroutine functions.

Global interceptors (for tracing, usage accounting, ...) wrap *every* module call:
`interceptor(module, call_next, args, kwargs) -> output`, an async function that must call
`await call_next(args, kwargs)` exactly once (or raise). The first registered is the outermost.

A call may revise what it is recorded as having been given: a module whose guardrails redacted
its request calls `revise_call_input(module, args, kwargs)` from inside its call, and an
interceptor that records inputs (tracing, the board) reads `revised_call_input()` once
`call_next` has returned or raised, so no record keeps what was redacted.
"""

from __future__ import annotations

import contextvars
import inspect
import itertools
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

PreHook: TypeAlias = Callable[..., Any]
PostHook: TypeAlias = Callable[..., Any]
CallNext: TypeAlias = Callable[[tuple[Any, ...], dict[str, Any]], Awaitable[Any]]
# the first argument is the `Module` being called (typed Any: this file sits below module.py)
Interceptor: TypeAlias = Callable[[Any, CallNext, tuple[Any, ...], dict[str, Any]], Awaitable[Any]]

_ids = itertools.count()
_interceptors: dict[int, Interceptor] = {}


class RemovableHandle:
    """Returned by every `register_*` call; `.remove()` unregisters (idempotent), or use `with`."""

    __slots__ = ("_id", "_registry")

    def __init__(self, registry: dict[int, Any], hook: Any) -> None:
        self._id = next(_ids)
        self._registry = registry
        registry[self._id] = hook

    def remove(self) -> None:
        self._registry.pop(self._id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


CallInput: TypeAlias = tuple[tuple[Any, ...], dict[str, Any]]

# (module, revisions) of the innermost call that runs through the interceptors
_call_input: contextvars.ContextVar[tuple[Any, list[CallInput]] | None] = contextvars.ContextVar(
    "promptimus_call_input", default=None
)


def open_call_input(module: Any) -> contextvars.Token[tuple[Any, list[CallInput]] | None]:
    """Start collecting the input revisions of `module`'s call (the call path does this around
    the interceptors; reset the token when the call ends)."""
    return _call_input.set((module, []))


def close_call_input(token: contextvars.Token[tuple[Any, list[CallInput]] | None]) -> None:
    _call_input.reset(token)


def revise_call_input(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """From inside `module`'s call: record the call as given `args` and `kwargs` instead of what
    it was called with (a guardrail redacted them). Nothing when no interceptor records it."""
    current = _call_input.get()
    if current is not None and current[0] is module:
        current[1].append((args, dict(kwargs)))


def revised_call_input() -> CallInput | None:
    """For an interceptor, after `call_next`: the input the call it wraps revised itself to
    (the latest), None when it kept what it was given."""
    current = _call_input.get()
    if current is None or not current[1]:
        return None
    return current[1][-1]


def register_module_call_interceptor(interceptor: Interceptor) -> RemovableHandle:
    """Wrap every module call in the process (the seam tracing and usage accounting use)."""
    return RemovableHandle(_interceptors, interceptor)


def active_interceptors() -> dict[int, Interceptor]:
    return _interceptors


# Automatic tracing: once OpenTelemetry is imported, module calls ask `auto_probe` (installed by
# `promptimus/__init__.py`, so this layer names no tracing code) whether a tracer provider has
# been configured; it returns True once settled (instrumented, or told never to), and is dropped.
auto_probe: Callable[[], bool] | None = None


def step_auto_probe() -> None:
    global auto_probe
    probe = auto_probe
    if probe is not None and probe():
        auto_probe = None


async def maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value
