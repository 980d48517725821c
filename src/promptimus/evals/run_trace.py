"""What happened inside one evaluated example: every module call, by path, with its inputs and
output (or error), in the order the calls finished; the tool calls among them with their
results, the guardrails' verdicts, and the LLM usage of each call's own requests.

`evaluate` records one `RunTrace` per example (`EvalRow.trace`) through the module call
interceptor and the provider-call observers, the seams tracing uses: nothing is patched, and
concurrent examples each record only their own calls (the trace being recorded is per
context). What a guardrail redacted is recorded as it left it, and the credentials of the
providers met on the way are cut out of every text. An optimizer shows its proposer the calls
of the module whose parameter it changes (`RunTrace.calls_under`, `RunTrace.render`), not
only the final output.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from ..core.hooks import (
    CallNext,
    RemovableHandle,
    register_module_call_interceptor,
    revised_call_input,
)
from ..guardrails.guardrail import Guardrail
from ..observe.provider_calls import ProviderCall, register_provider_call_observer
from ..tools.base import Tool
from .usage_collector import UsageTotals

__all__ = ["CallKind", "RunTrace", "TracedCall", "recording"]

CallKind = Literal["module", "tool", "guardrail"]

_current: contextvars.ContextVar[RunTrace | None] = contextvars.ContextVar(
    "promptimus_eval_trace", default=None
)
# the innermost call being recorded in this context: its LLM requests are counted on it
_open: contextvars.ContextVar[TracedCall | None] = contextvars.ContextVar(
    "promptimus_eval_trace_call", default=None
)
_handles: list[RemovableHandle] = []


@dataclass
class TracedCall:
    """One module call: `path` (e.g. ``root.summarise``), the module's class name, the
    arguments it was called with and its output (a reply's text and the tool calls it asked
    for), as text so a trace travels between processes and into a prompt, or the error it
    raised. `kind` says what the call was: a tool's run (`name` is the tool's; `inputs` its
    arguments, `output` its result), a guardrail's check (`name` is the guardrail's; `output`
    its verdict: ``allow``, ``block: <reason>`` or ``replace: <text>``), or any other module.
    `usage` counts the LLM requests the call made itself (not those of the calls inside it)."""

    path: str
    module: str
    inputs: str
    output: str = ""
    error: str | None = None
    kind: CallKind = "module"
    name: str | None = None
    usage: UsageTotals = field(default_factory=UsageTotals)

    def render(self) -> str:
        result = f"raised {self.error}" if self.error else f"-> {self.output}"
        if self.kind == "tool":
            what = f"[tool {self.name}]"
        elif self.kind == "guardrail":
            what = f"[{self.module}]"
        else:
            what = f"({self.module})"
        line = f"{self.path} {what}({self.inputs}) {result}"
        if self.usage.requests:
            requests = "request" if self.usage.requests == 1 else "requests"
            line += f" [{self.usage.requests} {requests}, {self.usage.total_tokens} tokens]"
        return line


@dataclass
class RunTrace:
    """The module calls of one example's run, in the order they finished."""

    calls: list[TracedCall] = field(default_factory=list)
    _secrets: set[str] = field(default_factory=set, repr=False, compare=False)

    def calls_under(self, path: str) -> list[TracedCall]:
        """The calls of the module at `path` and of the modules inside it."""
        return [c for c in self.calls if c.path == path or c.path.startswith(path + ".")]

    @property
    def tool_calls(self) -> list[TracedCall]:
        """The tools' runs, in the order they finished."""
        return [call for call in self.calls if call.kind == "tool"]

    @property
    def guardrail_calls(self) -> list[TracedCall]:
        """The guardrails' checks and their verdicts, in the order they finished."""
        return [call for call in self.calls if call.kind == "guardrail"]

    def render(self, path: str = "root", *, max_tokens: int = 400) -> str:
        """The calls under `path`, one per line, cut to about `max_tokens` tokens (four
        characters each); a cut says so and how many calls it left out."""
        limit = max(0, max_tokens) * 4
        lines: list[str] = []
        used = 0
        calls = self.calls_under(path)
        for number, call in enumerate(calls):
            line = call.render()
            if used + len(line) > limit:
                shown = number
                if limit - used > 40:
                    lines.append(line[: limit - used - 3] + "...")
                    shown += 1
                lines.append(
                    f"[cut at about {max_tokens} tokens; {len(calls) - shown} more call(s) "
                    "not shown]"
                )
                break
            lines.append(line)
            used += len(line) + 1
        return "\n".join(lines)

    def redact(self, text: str) -> str:
        """`text` without the credentials of the providers met so far in the run being
        recorded (the row's error is told through it, as the calls are)."""
        for secret in sorted((s for s in self._secrets if len(s) >= 4), key=len, reverse=True):
            text = text.replace(secret, "[secret]")
        return text

    def _scrub(self) -> None:
        """Cut the credentials met during the run out of every recorded text, and forget
        them (the trace travels: to a worker's caller, into a history, onto the board)."""
        if self._secrets:
            for call in self.calls:
                for name in ("inputs", "output", "error"):
                    text = getattr(call, name)
                    if text:
                        setattr(call, name, self.redact(text))
        self._secrets.clear()


def _shown(value: Any) -> str:
    messages = getattr(value, "messages", None)
    if isinstance(messages, list) and all(hasattr(m, "role") for m in messages):
        return _conversation(messages)  # an agent's request to its model
    if hasattr(value, "role") and hasattr(value, "content"):
        return _message_text(value)
    if isinstance(value, list) and value and all(hasattr(m, "role") for m in value):
        return _conversation(value)
    return repr(value)


def _message_text(message: Any) -> str:
    """A reply: its text, and the tool calls it asked for."""
    content = message.content if isinstance(message.content, str) else ""
    requests = getattr(message, "tool_calls", None) or []
    if not requests:
        return repr(content)
    calls = ", ".join(f"{r.function.name}({r.function.arguments})" for r in requests)
    return f"{content!r} calls {calls}" if content else f"calls {calls}"


def _role(message: Any) -> str:
    role = message.role
    return str(getattr(role, "value", role))


def _conversation(messages: list[Any]) -> str:
    """The messages after the leading system ones (those hold the prompt being trained, which
    the proposer is shown already), each as ``role: text``; a tool's result is named after
    the tool that gave it."""
    names = {
        request.id: request.function.name
        for message in messages
        for request in getattr(message, "tool_calls", None) or []
    }
    start = 0
    while start < len(messages) and _role(messages[start]) == "system":
        start += 1
    parts = []
    for message in messages[start:]:
        role = _role(message)
        if role == "tool":
            role = f"tool {names.get(message.tool_call_id, '')}".rstrip()
        parts.append(f"{role}: {_message_text(message)}")
    return "; ".join(parts)


def _inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    shown = [_shown(arg) for arg in args]
    shown += [f"{name}={_shown(value)}" for name, value in kwargs.items() if value is not None]
    return ", ".join(shown)


def _verdict(value: Any) -> str:
    action = getattr(value, "action", None)
    if action == "block":
        return f"block: {value.reason}" if value.reason else "block"
    if action == "replace":
        return f"replace: {value.text!r}"
    return str(action)


def _provider_secrets(provider: Any) -> list[str]:
    secrets = getattr(provider, "secrets", None)
    if not callable(secrets):
        return []
    try:
        return [value for value in secrets() if isinstance(value, str)]
    except Exception:  # a provider that cannot list its keys has none to hide
        return []


def _start(module: Any, trace: RunTrace, args: tuple[Any, ...], kwargs: Any) -> TracedCall:
    for provider in module.own_providers().values():
        trace._secrets.update(_provider_secrets(provider))
    call = TracedCall(module.path, type(module).__name__, _inputs(args, dict(kwargs)))
    if isinstance(module, Tool):
        call.kind, call.name = "tool", module.name
    elif isinstance(module, Guardrail):
        call.kind, call.name = "guardrail", module.name
        call.module = f"{module.kind} guardrail {module.name!r}"
    return call


async def _intercept(module: Any, call_next: CallNext, args: tuple[Any, ...], kwargs: Any) -> Any:
    trace = _current.get()
    if trace is None:
        return await call_next(args, kwargs)
    call = _start(module, trace, tuple(args), kwargs)
    token = _open.set(call)
    try:
        output = await call_next(args, kwargs)
    except Exception as exc:
        call.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        _open.reset(token)
        revised = revised_call_input()  # a guardrail redacted it: record it as it left it
        if revised is not None:
            call.inputs = _inputs(*revised)
        trace.calls.append(call)
    call.output = _verdict(output) if call.kind == "guardrail" else _shown(output)
    return output


class _UsageObserver:
    """Counts each finished LLM request on the call that made it."""

    def on_start(self, call: ProviderCall) -> None:
        pass

    def on_end(self, call: ProviderCall) -> None:
        trace, traced = _current.get(), _open.get()
        if trace is None:
            return
        trace._secrets.update(_provider_secrets(call.provider))
        if traced is not None and call.kind == "llm":
            traced.usage.add_usage(call.request_count, call.usage)


@contextmanager
def recording() -> Iterator[RunTrace]:
    """Record the module calls made in this context inside the block."""
    if not _handles:
        _handles.append(register_module_call_interceptor(_intercept))
        _handles.append(register_provider_call_observer(_UsageObserver()))
    trace = RunTrace()
    token = _current.set(trace)
    try:
        yield trace
    finally:
        _current.reset(token)
        trace._scrub()
