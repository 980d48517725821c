"""Prebuilt modules. Names load on first use to keep `import promptimus.modules` light."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY: dict[str, str] = {
    "Prompt": "prompt",
    "Memory": "memory",
    "MemoryModule": "memory",
    "ResetMemoryContext": "memory",
}

if TYPE_CHECKING:
    from .memory import Memory as Memory
    from .memory import MemoryModule as MemoryModule
    from .memory import ResetMemoryContext as ResetMemoryContext
    from .prompt import Prompt as Prompt


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'promptimus.modules' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{target}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = list(_LAZY)
