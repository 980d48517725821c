"""Whether a dataset's inputs fit the module, checked before anything is called.

`evaluate` calls `await module(**example.inputs)`; inputs named otherwise than the parameters of
the module's `forward` (a dataset written for another module, `{"question": ...}` for an agent
whose `forward` takes `request`) would fail every row with a `TypeError` and spend each call's
budget. `check_inputs` binds every example's inputs to the signature first and refuses the run,
naming the inputs and the parameters, when any of them does not fit.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ..core import Module
from ..errors import ExampleInputsMismatch
from .example import Example

__all__ = ["check_inputs"]

_SHOWN = 3  # examples named in the message


def _signature(module: Callable[..., Any]) -> tuple[str, inspect.Signature] | None:
    """What is called with the inputs, and its signature; None when Python cannot tell."""
    target = module.forward if isinstance(module, Module) else module
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):  # a builtin or an extension type: let the call decide
        return None
    if isinstance(module, Module):
        name = f"{type(module).__name__}.forward"
    else:
        name = getattr(target, "__qualname__", None) or type(module).__qualname__
    return name, signature


def _plain(signature: inspect.Signature) -> str:
    """`(request, deps=None, **prompt_vars)`: the parameters without their annotations."""
    params = [p.replace(annotation=p.empty) for p in signature.parameters.values()]
    return str(signature.replace(parameters=params, return_annotation=signature.empty))


def _why(signature: inspect.Signature, inputs: dict[str, Any]) -> str | None:
    try:
        signature.bind(**inputs)
    except TypeError:
        pass
    else:
        return None
    params = signature.parameters.values()
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    unknown = [key for key in inputs if key not in named and not takes_any]
    missing = [
        p.name
        for p in params
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and (p.name not in inputs or p.kind is p.POSITIONAL_ONLY)
    ]
    parts = []
    if unknown:
        parts.append(f"{', '.join(map(repr, unknown))} not taken")
    if missing:
        parts.append(f"{', '.join(map(repr, missing))} missing")
    return "; ".join(parts) or "does not bind"


def check_inputs(module: Callable[..., Any], examples: Sequence[Example], what: str) -> None:
    """`ExampleInputsMismatch` when the inputs of any of `examples` (`what`: "evaluate's
    dataset", "fit's trainset"...) cannot be passed to `module` as keyword arguments."""
    found = _signature(module)
    if found is None:
        return
    name, signature = found
    misfits: list[tuple[int, Example, str]] = []
    for index, example in enumerate(examples):
        why = _why(signature, example.inputs)
        if why is not None:
            misfits.append((index, example, why))
    if not misfits:
        return
    shown = "; ".join(
        f"example {index} gives ({', '.join(example.inputs) or 'nothing'}): {why}"
        for index, example, why in misfits[:_SHOWN]
    )
    more = f" ({len(misfits) - _SHOWN} more)" if len(misfits) > _SHOWN else ""
    called = f"{name}{_plain(signature)}"
    raise ExampleInputsMismatch(
        f"{len(misfits)} of {len(examples)} examples of {what} do not fit {called}, "
        f"which is called as module(**example.inputs): {shown}{more}. Name the inputs after its "
        "parameters (Example({'<parameter>': ...})), or give the module a forward that takes "
        "them. Nothing was called."
    )
