"""The agents' calling forms of earlier versions.

- ``ToolCallingAgent(tools, max_steps, memory_size, prompt, observation_role, shared_memory)``:
  the ReACT agent took its tools first until it took `OpenaiToolCallingAgent`'s order
  ``(prompt, tools, max_steps, memory_size, ...)``. The tools-first order is everywhere in code
  and notebooks written since 0.1, so it is taken without a warning.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["react_agent_arguments"]

Arguments = tuple[tuple[Any, ...], dict[str, Any]]

# the places of the tools-first order, after `self`
_TOOLS_FIRST = ("tools", "max_steps", "memory_size", "prompt", "observation_role", "shared_memory")


def _is_tools(value: Any) -> bool:
    """A collection of tools, as opposed to a prompt (text, None, or a function that writes it)."""
    if value is None or isinstance(value, str | bytes):
        return False
    return isinstance(value, Iterable) or not callable(value)


def react_agent_arguments(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    """`ToolCallingAgent.__init__`'s translator: the tools-first positional order into keywords
    (a positional argument that is also given by keyword is left for Python to refuse)."""
    if len(args) < 2 or not _is_tools(args[1]):
        return args, kwargs
    positional = args[1:]
    if len(positional) > len(_TOOLS_FIRST):
        return args, kwargs  # too many: Python names the error
    moved = dict(zip(_TOOLS_FIRST, positional, strict=False))
    clash = sorted(set(moved) & set(kwargs))
    if clash:
        raise TypeError(
            f"ToolCallingAgent got multiple values for argument {clash[0]!r} (its tools-first "
            f"order is {', '.join(_TOOLS_FIRST)})"
        )
    return (args[0],), {**moved, **kwargs}
