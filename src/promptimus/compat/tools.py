"""promptimus 0.1's spellings of tool calls (`promptimus.tools` reaches them through
`promptimus._compat_seam`):

- `await tool.forward('{"a": 2, "b": 8}')`: one JSON-object string, validated as the model's
  arguments are (`ToolArgumentsError` if they do not fit, the context injected where the
  function asks for it); with `history=...` a handoff tool (`Tool.from_module(agent,
  handoff_history=True)`) gets that conversation. A text argument that looks like a JSON
  object goes by keyword. Not deprecated: 0.1's tutorials call tools this way.
- `tool.to_openai_function()`: the old name of `tool.to_openai()` (warns).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from promptimus.dto import Message
    from promptimus.tools import RunContext, Tool

__all__ = ["json_object_call", "to_openai_function"]


def json_object_call(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`Tool.forward`'s translator: `forward('{...}')` / `forward('{...}', history=...)` become
    a call with the Python arguments the JSON stands for; every other call passes untouched."""
    if not (
        len(args) == 2
        and isinstance(args[1], str)
        and args[1].lstrip().startswith("{")
        and set(kwargs) <= {"history"}
    ):
        return args, kwargs
    tool, text = args
    history = kwargs.get("history")
    ctx: RunContext[Any] | None = None
    if history is not None and getattr(tool, "handoff_history", False):
        from promptimus.tools.run_context import RunContext

        ctx = RunContext(messages=_message_list(history), handoff_view=_as_handed)
    positional, keywords = tool.prepare(text, ctx)
    return (tool, *positional), keywords


def to_openai_function(tool: Tool) -> dict[str, Any]:
    """0.1's name of `Tool.to_openai()`."""
    warnings.warn(
        "Tool.to_openai_function() is deprecated; use Tool.to_openai() instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    return tool.to_openai()


def _as_handed(messages: list[Message], include_tool_loop: bool) -> list[Message]:
    return messages  # the conversation the caller handed over, as it is


def _message_list(history: Any) -> list[Message]:
    from promptimus.dto import Message, MessageRole

    if isinstance(history, str):
        return [Message(role=MessageRole.USER, content=history)]
    if isinstance(history, Message):
        return [history]
    return list(history)
