"""Pickling a decorated function tool by its function's name.

`@Tool.decorate` puts the tool where its function was, so pickle, which finds a function by its
module and qualified name, would find the tool there instead: such a function travels as its
name, and unpickling takes the function back from the tool found under it.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["FunctionByName", "shadowed_by"]


@dataclass(frozen=True, slots=True)
class FunctionByName:
    module: str
    qualname: str

    def resolve(self) -> Any:
        """What is found under the name now (the tool that took the function's place)."""
        owner: Any = importlib.import_module(self.module)
        for part in self.qualname.split("."):
            owner = getattr(owner, part)
        return owner


def shadowed_by(fn: Any, tool: Any) -> bool:
    """Whether `fn` is reachable by its module and qualified name only through `tool`."""
    if not inspect.isfunction(fn) or "<locals>" in fn.__qualname__:
        return False
    owner: Any = sys.modules.get(fn.__module__)
    for part in fn.__qualname__.split("."):
        owner = getattr(owner, part, None)
    return owner is tool
