"""promptimus 0.1's names on the core classes: `Module.with_provider` and
`ModuleDict.objects_map`. Each use warns once, at the caller's line, naming today's."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from promptimus.core import Module, ModuleDict

__all__ = ["objects_map", "with_provider"]


def with_provider(module: Module, provider: Any) -> Module:
    """0.1's first name of `with_llm` (its early tutorials use it)."""
    warnings.warn(
        "Module.with_provider() is promptimus 0.1's name; use with_llm() instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    return module.with_llm(provider)


def objects_map(entries: ModuleDict) -> dict[str, Module]:
    """0.1's dict of a `ModuleDict`'s entries (a copy); the ModuleDict is itself the mapping."""
    warnings.warn(
        "ModuleDict.objects_map is promptimus 0.1's; use the ModuleDict itself (a mapping): "
        "md.items(), md.values(), md[name].",
        DeprecationWarning,
        stacklevel=3,
    )
    return dict(entries.items())
