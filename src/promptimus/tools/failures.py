"""What becomes of an exception raised inside a tool's Python code during the model's call.

Errors a model can react to become `ToolExecutionError` (the original as its `__cause__`), which
an agent sends back as the tool's result; every other `PromptimusError` (no LLM set, provider
down, bad template, exhausted test script) is the user's to fix and propagates as is.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from ..errors import (
    FailedToParseOutput,
    MaxIterExceeded,
    OutputTruncated,
    PromptimusError,
    ToolError,
    ToolExecutionError,
)

__all__ = ["reporting_failures"]

_MODEL_FIXABLE: tuple[type[PromptimusError], ...] = (
    ToolError,
    MaxIterExceeded,
    FailedToParseOutput,
    OutputTruncated,
)


async def reporting_failures(tool: str, call: Awaitable[Any]) -> Any:
    """Await `call` (a run of tool `tool`), its failures worded for the model."""
    try:
        return await call
    except _MODEL_FIXABLE as exc:
        raise ToolExecutionError(f"Tool {tool!r} failed: {exc}") from exc
    except PromptimusError:
        raise
    except Exception as exc:
        raise ToolExecutionError(f"Tool {tool!r} failed: {type(exc).__name__}: {exc}") from exc
