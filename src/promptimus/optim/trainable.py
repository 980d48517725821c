"""Which parameters an optimizer may change: set, not frozen, holding text."""

from __future__ import annotations

from typing import Any

from ..core import Module, Parameter
from ..errors import NothingToTrain


def trainable_parameters(module: Module) -> dict[str, Parameter[Any]]:
    """`{relative path: parameter}` of every text parameter that is set and not frozen, in
    `named_parameters()` order (a parameter shared by several modules appears once)."""
    return {
        path: param
        for path, param in module.named_parameters()
        if not param.frozen and param.is_set and isinstance(param.value, str)
    }


def require_trainable(module: Module) -> dict[str, Parameter[Any]]:
    params = trainable_parameters(module)
    if not params:
        raise NothingToTrain(
            f"{type(module).__name__} has no trainable parameter: every text Parameter is frozen "
            "or unset. Unfreeze the ones to train (`param.requires_grad = True`, or "
            "`module.requires_grad_()` for the whole tree)."
        )
    return params
