"""What a tool is configured with, checked when it is given: a name the model can call, a
timeout, an approval rule and whether a call may safely run twice."""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

from ..errors import InvalidArgument, InvalidToolName
from .run_context import RunContext

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "ApprovalCheck",
    "check_approval",
    "check_idempotent",
    "check_timeout",
    "check_tool_name",
    "snake_case",
]

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

ApprovalCheck: TypeAlias = Callable[[RunContext[Any], dict[str, Any]], bool | Awaitable[bool]]
"""`fn(ctx, arguments) -> bool` (sync or async): does this call need a person's approval?"""

DEFAULT_TOOL_TIMEOUT = 300.0
"""Seconds an agent waits for a tool call when neither the tool nor the agent sets a timeout."""


def check_timeout(value: Any, what: str) -> float | None:
    """`value` if it is None or a positive number of seconds, else `InvalidArgument`."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or math.isnan(value)
        or value <= 0
    ):
        raise InvalidArgument(
            f"{what} must be a positive number of seconds or None, got {value!r}."
        )
    return float(value)


def check_idempotent(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(
            f"idempotent must be True (a call may safely run twice) or False, got {value!r}."
        )
    return value


def check_approval(value: Any) -> bool | ApprovalCheck:
    if isinstance(value, bool) or callable(value):
        return value  # type: ignore[no-any-return]
    raise InvalidArgument(
        f"requires_approval must be True, False or a function (ctx, arguments) -> bool, got "
        f"{value!r}."
    )


def check_tool_name(name: Any) -> str:
    """Return `name` if it is a valid tool name (OpenAI: `^[a-zA-Z0-9_-]{1,64}$`), else raise."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidToolName(
            f"Invalid tool name {name!r}: use 1 to 64 characters from a-z, A-Z, 0-9, '_' and '-' "
            "(the OpenAI rule). Pass `name=...` to choose one."
        )
    return name


def snake_case(name: str) -> str:
    """`WeatherAgent` -> `weather_agent`, `RAGModule` -> `rag_module`; invalid characters become
    `_` and the result is cut to 64 characters, so it is always a valid tool name."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    cleaned = re.sub(r"[^a-z0-9_-]+", "_", words).strip("_")
    return cleaned[:64] or "tool"
