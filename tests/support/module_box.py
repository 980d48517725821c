"""`Box`: a module with no parameters or submodules of its own, which tests fill by assignment
(`box.prompt = Parameter("hi")`, `box.child = Box()`) to build the tree they need.

Many test folders build trees this way (registration, introspection, checkpoints, 0.1 code);
one class keeps their reprs and checkpoints alike (`Box(...)` in a repr is this class).
"""

from __future__ import annotations

from typing import Any

from promptimus import Module


class Box(Module):
    """A module to attach parameters and submodules to; calling it returns None."""

    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        return None
