"""`Guarded`: input and output guardrails around any module's `forward`."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from ..core import Module, ModuleList
from ..core.hooks import revise_call_input
from ..dto import Message, MessageRole
from ..errors import InvalidArgument, InvalidVerdict
from ..modules.output_judge import OutputJudge, judging_output
from .guardrail import Guardrail, OutputGuardrail, ToolGuardrail
from .screen import Guards, checked_guardrails, screen_text, tripped

__all__ = ["Guarded"]


class Guarded(Module):
    """`module` with `guardrails` around its `forward`: input guardrails check the request
    (the first argument: a text, a message, or a list of messages, whose last user message is
    checked), output guardrails check what `module` returns (a text, a message's content, or a
    pydantic model as JSON). A replacement is passed on in place of the original; a block raises
    `GuardrailTripped`, or for an output guardrail with `retry=N` calls `module` again, up to N
    times. A `StructuralOutput.stream` inside `module` shows nothing before the output
    guardrails judged its answer (see `promptimus.modules.output_judge`); its block raises at
    once, without a retry. Input guardrails are all waited for here (`parallel` applies to
    agents, whose first model request can start beside the check). Tool guardrails need an
    agent: give them to the agent's `guardrails=`."""

    def __init__(self, module: Module, guardrails: Iterable[Guardrail]) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise InvalidArgument(f"Guarded wraps a Module, got {type(module).__name__}.")
        guards = checked_guardrails(guardrails)
        if any(isinstance(guard, ToolGuardrail) for guard in guards):
            raise InvalidArgument(
                "Guarded runs input and output guardrails; a ToolGuardrail needs an agent: pass "
                "it to the agent's guardrails=[...]."
            )
        self.module = module
        self.guardrails = ModuleList(guards)

    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        guards = Guards.of(self.guardrails)
        inputs = (*guards.input, *guards.parallel)
        if inputs:
            given = args, kwargs
            args, kwargs = await self._screen_arguments(inputs, args, kwargs)
            if _changed(given, (args, kwargs)):  # redacted: no record keeps what was replaced
                revise_call_input(self, args, kwargs)
        retries: dict[int, int] = {}
        while True:
            if not guards.output:
                return await self.module(*args, **kwargs)
            judged: list[Any] = []  # what a stream inside had judged, as it was left
            with judging_output(self._judge(guards.output, judged)):
                output = await self.module(*args, **kwargs)
            if any(output is value for value in judged):
                return output
            text = _output_text(output)
            screened, _, blocked = await screen_text(guards.output, text)
            if blocked is None:
                return output if screened == text else _replaced(output, screened)
            guard = blocked.guard
            used = retries.get(id(guard), 0)
            if used >= getattr(guard, "retry", 0):
                raise tripped(blocked, f"Guarded {self.module.path!r}")
            retries[id(guard)] = used + 1

    def _judge(self, guards: tuple[OutputGuardrail, ...], judged: list[Any]) -> OutputJudge:
        """The judge a stream inside `module` asks (`promptimus.modules.output_judge`): the
        value as `guards` left it, kept in `judged`; a block raises `GuardrailTripped`."""

        async def judge(value: Any) -> Any:
            with judging_output(None):  # a judge's own streams are not held for it
                text = _output_text(value)
                screened, _, blocked = await screen_text(guards, text)
            if blocked is not None:
                raise tripped(blocked, f"Guarded {self.module.path!r}")
            shown = value if screened == text else _replaced(value, screened)
            judged.append(shown)
            return shown

        return judge

    async def _screen_arguments(
        self, guards: tuple[Guardrail, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's arguments with the request (the first positional argument, or the
        keyword of `forward`'s first parameter) screened: a request given by keyword is
        checked as one given by position, never passed around the guardrails."""
        if args:
            return (await self._screen_request(guards, args[0]), *args[1:]), kwargs
        key = _first_parameter(self.module)
        if key is None or key not in kwargs:
            raise InvalidArgument(
                f"Guarded {self.module.path!r} has input guardrails but was called without a "
                "request to check: pass the request as the first argument."
            )
        return args, {**kwargs, key: await self._screen_request(guards, kwargs[key])}

    async def _screen_request(self, guards: tuple[Guardrail, ...], request: Any) -> Any:
        where = f"Guarded {self.module.path!r}"
        if isinstance(request, str):
            text, _, blocked = await screen_text(guards, request)
            if blocked is not None:
                raise tripped(blocked, where)
            return text
        messages = [request] if isinstance(request, Message) else request
        if not (isinstance(messages, list) and all(isinstance(m, Message) for m in messages)):
            raise InvalidArgument(
                f"{where} has input guardrails, which check a text, a message or a list of "
                f"messages; got {type(request).__name__}: pass the request in one of those forms."
            )
        position = _last_user(messages)
        if position is None:
            return request
        original = messages[position]
        text, _, blocked = await screen_text(guards, original.content)
        if blocked is not None:
            raise tripped(blocked, where)
        if text == original.content:
            return request
        changed = original.model_copy(update={"content": text})
        if isinstance(request, Message):
            return changed
        return [*messages[:position], changed, *messages[position + 1 :]]


def _changed(given: tuple[Any, ...], screened: tuple[Any, ...]) -> bool:
    """Whether screening replaced an argument (by identity: a value's own `==` is not asked)."""
    (args, kwargs), (new_args, new_kwargs) = given, screened
    return any(a is not b for a, b in zip(args, new_args, strict=True)) or any(
        kwargs[key] is not new_kwargs[key] for key in kwargs
    )


def _first_parameter(module: Module) -> str | None:
    """The name of the first parameter of `module.forward` that a keyword can fill."""
    for parameter in inspect.signature(module.forward).parameters.values():
        keyword = (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
        return parameter.name if parameter.kind in keyword else None
    return None


def _last_user(messages: list[Any]) -> int | None:
    for position in range(len(messages) - 1, -1, -1):
        message = messages[position]
        if isinstance(message, Message) and message.role == MessageRole.USER:
            return position
    return None


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, Message):
        return output.content
    if isinstance(output, BaseModel):
        return output.model_dump_json()
    return str(output)


def _replaced(output: Any, text: str) -> Any:
    """`output` with the text an output guardrail put in its place."""
    if isinstance(output, str):
        return text
    if isinstance(output, Message):
        return output.model_copy(update={"content": text})
    if isinstance(output, BaseModel):
        try:
            return type(output).model_validate_json(text)
        except ValidationError as exc:
            raise InvalidVerdict(
                f"An output guardrail replaced a {type(output).__name__} with text that is not "
                f"a valid one ({exc.error_count()} error(s)): replace it with its JSON form."
            ) from None
    raise InvalidVerdict(
        f"An output guardrail cannot replace a {type(output).__name__}: only a text, a message "
        "or a pydantic model."
    )
