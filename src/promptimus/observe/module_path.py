"""The name a module's spans and usage are filed under: its absolute path from `root`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..core import Module


def absolute_path(module: Module, root_labels: Mapping[Module, str] | None = None) -> str:
    """`root`, `root.agent`, `root.agent.predictor` (a shared module: its first parent's path).

    `root_labels` maps a root module to the name its tree is traced under (the original
    promptimus' `trace(module, module_name)`), replacing `root`.
    """
    path = module.path
    if root_labels:
        root = module
        while True:
            owner = next(root._live_owners(), None)
            if owner is None:
                break
            root = owner
        label = root_labels.get(root)
        if label is not None:
            path = label + path[4:]
    return path
