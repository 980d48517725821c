"""The guardrails: `InputGuardrail`, `OutputGuardrail` and `ToolGuardrail`.

A guardrail is a `Module` around a check. The check is a function (sync or async) or a module;
a module check is registered under the guardrail as `check`, so a judge's prompt is a
`Parameter` of the tree: it is in `state_dict()` and the checkpoint, shows in `print(agent)`,
finds the agent's LLM through the tree, is traced and counted under its own path, and `fit`
trains it like any other. Calling a guardrail runs the check through the module call path and
returns its `Verdict`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from ..argument_checks import non_negative_int
from ..core import Module
from ..core.hooks import revise_call_input
from ..errors import InvalidArgument
from .verdict import Verdict, as_verdict

__all__ = ["Guardrail", "InputGuardrail", "OutputGuardrail", "ToolGuardrail"]


class Guardrail(Module):
    """What the three kinds share: the check, a `name` (the check's, unless given) and how it
    is called (`await guard(...)` returns a `Verdict`)."""

    kind: ClassVar[str] = "input"

    def __init__(self, check: Callable[..., Any] | Module, *, name: str | None = None) -> None:
        super().__init__()
        if isinstance(check, Module):
            self.check = check
            self._function: Callable[..., Any] | None = None
        elif callable(check):
            self._function = check
        else:
            raise InvalidArgument(
                f"A {type(self).__name__} takes a check: a function (sync or async) or a "
                f"Module, got {type(check).__name__}."
            )
        if name is not None and not (isinstance(name, str) and name.strip()):
            raise InvalidArgument(f"A guardrail's name must be a non-empty text, got {name!r}.")
        self._name = name or getattr(check, "__name__", None) or type(check).__name__

    @property
    def name(self) -> str:
        return self._name

    async def forward(self, *args: Any, **kwargs: Any) -> Verdict:
        if self._function is None:
            value = await self.check(*args, **kwargs)
        else:
            value = self._function(*args, **kwargs)
            if inspect.isawaitable(value):
                value = await value
        verdict = as_verdict(value, f"The {self.kind} guardrail {self._name!r}")
        if verdict.action == "replace" and len(args) == 1 and not kwargs:
            # what it redacted is recorded (traces, the board) as it left it, here too
            revise_call_input(self, (verdict.text,), {})
        return verdict

    def extra_repr(self) -> str:
        return repr(self._name)


class InputGuardrail(Guardrail):
    """Checks the text of a request before the model sees it (`check(text)`).

    By default the run waits for the verdict, so nothing is sent before it allows. With
    `parallel=True` the first model request starts at once beside the check: a block cancels
    that request, a replacement sends the step again with the replaced text, and no tool runs
    until the check has allowed the request."""

    kind: ClassVar[str] = "input"

    def __init__(
        self, check: Callable[..., Any] | Module, *, parallel: bool = False, name: str | None = None
    ) -> None:
        super().__init__(check, name=name)
        if not isinstance(parallel, bool):
            raise InvalidArgument(f"parallel= takes True or False, got {parallel!r}.")
        self.parallel = parallel

    def extra_repr(self) -> str:
        return f"{self._name!r}, parallel=True" if self.parallel else repr(self._name)


class OutputGuardrail(Guardrail):
    """Checks the text of a final answer before the caller gets it (`check(text)`). A block
    raises `GuardrailTripped`, or with `retry=N` sends the model back with the reason, up to N
    times per run."""

    kind: ClassVar[str] = "output"

    def __init__(
        self, check: Callable[..., Any] | Module, *, retry: int = 0, name: str | None = None
    ) -> None:
        super().__init__(check, name=name)
        self.retry = non_negative_int(retry, "OutputGuardrail(retry=)")

    def extra_repr(self) -> str:
        return f"{self._name!r}, retry={self.retry}" if self.retry else repr(self._name)


class ToolGuardrail(Guardrail):
    """Checks a tool call before it runs (`check(name, arguments)`, the arguments decoded and
    validated against the tool's schema). `tools` limits it to the tools so named (one name or
    several; None: every tool). A block answers the model that the call was refused, or ends
    the run with `GuardrailTripped` when the verdict says `stop=True`."""

    kind: ClassVar[str] = "tool"

    def __init__(
        self,
        check: Callable[..., Any] | Module,
        tools: str | Iterable[str] | None = None,
        *,
        name: str | None = None,
    ) -> None:
        super().__init__(check, name=name)
        self.tools = _tool_names(tools)

    def applies_to(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools

    def extra_repr(self) -> str:
        if self.tools is None:
            return repr(self._name)
        return f"{self._name!r}, tools={sorted(self.tools)}"


def _tool_names(tools: str | Iterable[str] | None) -> frozenset[str] | None:
    if tools is None:
        return None
    names = [tools] if isinstance(tools, str) else list(tools)
    if not all(isinstance(name, str) and name for name in names):
        raise InvalidArgument(
            f"ToolGuardrail(tools=) takes tool names (a name or a list of names), got {tools!r}."
        )
    return frozenset(names)
