"""What happened inside one evaluated example: every module call, by path, with its inputs and
output (or error), in the order the calls finished.

`evaluate` records one `RunTrace` per example (`EvalRow.trace`) through the module call
interceptor, the seam tracing uses: nothing is patched, and concurrent examples each record
only their own calls (the trace being recorded is per context). An optimizer shows its
proposer the calls of the module whose parameter it changes (`RunTrace.calls_under`,
`RunTrace.render`), not only the final output.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..core.hooks import CallNext, RemovableHandle, register_module_call_interceptor

__all__ = ["RunTrace", "TracedCall", "recording"]

_current: contextvars.ContextVar[RunTrace | None] = contextvars.ContextVar(
    "promptimus_eval_trace", default=None
)
_handle: RemovableHandle | None = None


@dataclass
class TracedCall:
    """One module call: `path` (e.g. ``root.summarise``), the module's class name, the
    arguments it was called with and its output (a reply's text), as text so a trace travels
    between processes and into a prompt, or the error it raised."""

    path: str
    module: str
    inputs: str
    output: str = ""
    error: str | None = None

    def render(self) -> str:
        result = f"raised {self.error}" if self.error else f"-> {self.output}"
        return f"{self.path} ({self.module})({self.inputs}) {result}"


@dataclass
class RunTrace:
    """The module calls of one example's run, in the order they finished."""

    calls: list[TracedCall] = field(default_factory=list)

    def calls_under(self, path: str) -> list[TracedCall]:
        """The calls of the module at `path` and of the modules inside it."""
        return [c for c in self.calls if c.path == path or c.path.startswith(path + ".")]

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


def _shown(value: Any) -> str:
    content = getattr(value, "content", None)
    return repr(content if isinstance(content, str) else value)


def _inputs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    shown = [_shown(arg) for arg in args]
    shown += [f"{name}={_shown(value)}" for name, value in kwargs.items() if value is not None]
    return ", ".join(shown)


async def _intercept(module: Any, call_next: CallNext, args: tuple[Any, ...], kwargs: Any) -> Any:
    trace = _current.get()
    if trace is None:
        return await call_next(args, kwargs)
    call = TracedCall(module.path, type(module).__name__, _inputs(tuple(args), dict(kwargs)))
    try:
        output = await call_next(args, kwargs)
    except Exception as exc:
        call.error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        trace.calls.append(call)
    call.output = _shown(output)
    return output


@contextmanager
def recording() -> Iterator[RunTrace]:
    """Record the module calls made in this context inside the block."""
    global _handle
    if _handle is None:
        _handle = register_module_call_interceptor(_intercept)
    trace = RunTrace()
    token = _current.set(trace)
    try:
        yield trace
    finally:
        _current.reset(token)
