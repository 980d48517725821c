"""The names packages had before, served where code written for them still imports them.

Two kinds, both looked up by the package's ``__getattr__`` (`promptimus._compat_seam.compat_names`)
only when the package itself has no such name:

- `SERVED`: names a package exported before they got a home of their own higher up the tiers
  (the agents in ``promptimus.modules``, 0.1's search result in ``promptimus.vector_stores``).
  They are today's objects under a path that still works, so they do not warn.
- `RENAMED`: 0.1's names for what is now called otherwise. Each access warns (a
  `DeprecationWarning` naming the new name, at the caller's line) and gives today's object, so
  ``except ProviderRetryExceded:`` keeps catching what promptimus raises.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

__all__ = ["RENAMED", "SERVED", "older_name"]

_AGENTS = (
    "BaseAgent",
    "RunResult",
    "OpenaiToolCallingAgent",
    "ToolCallingAgent",
    "DynamicPrompt",
    "AgentEvent",
    "TextDelta",
    "ReasoningDelta",
    "ToolCallEvent",
    "ToolResultEvent",
    "ToolErrorEvent",
    "StepEnd",
    "FinalResult",
    "parse_react",
    "ReactAction",
    "ReactAnswer",
    "RunRecord",
    "StepRecord",
    "ToolCallRecord",
    "current_record",
    "capture_records",
    "recording",
)

SERVED: dict[str, dict[str, str]] = {
    # package -> {name: the module it is read from}
    "promptimus.modules": dict.fromkeys(_AGENTS, "promptimus.agents"),
    "promptimus.vector_stores": {
        "BaseSearchResult": "promptimus.compat.search_result",
        "PerDocumentVectorStoreProtocol": "promptimus.compat.per_document",
        "PerDocumentTextStoreProtocol": "promptimus.compat.per_document",
    },
}

RENAMED: dict[str, dict[str, str]] = {
    # package -> {old name: the absolute path of today's object}
    "promptimus.errors": {
        "ProviderRetryExceded": "promptimus.errors.RetryBudgetExhausted",
        "InvalidToolConfig": "promptimus.errors.ToolError",
        "RefResolutionError": "promptimus.errors.CheckpointReferenceError",
        # never raised: an unknown tool's name goes back to the model
        "UnknownTool": "promptimus.errors.ToolError",
    },
    "promptimus.core.module": {"ModuleDict": "promptimus.core.ModuleDict"},
    "promptimus.llms.base": {"ProviderProtocol": "promptimus.llms.base.LLMProtocol"},
    "promptimus.llms": {"DummyLLm": "promptimus.llms.DummyLLM"},
    "promptimus.llms.dummy": {"DummyLLm": "promptimus.llms.dummy.DummyLLM"},
    "promptimus.modules.tool": {
        "Tool": "promptimus.tools.Tool",
        "SupportsHandoff": "promptimus.tools.SupportsHandoff",
        "ToolCallingAgent": "promptimus.agents.ToolCallingAgent",
        "OpenaiToolCallingAgent": "promptimus.agents.OpenaiToolCallingAgent",
    },
    "promptimus.modules.rag": {
        "DEFAULT_SYSTEM_PROMPT": "promptimus.modules.rag.DEFAULT_RAG_SYSTEM_PROMPT",
    },
    "promptimus.modules.structural": {
        "DEFAULT_SYSTEM_PROMPT_NO_SCHEMA": "promptimus.modules.structural.DEFAULT_SYSTEM_PROMPT",
        "DEFAULT_RETRY_MESSAGE": "promptimus.modules.structural.DEFAULT_RETRY_TEMPLATE",
    },
}


def older_name(package: str, name: str) -> Any:
    """``package.name`` for a name the package no longer defines; `AttributeError` if it never
    had it. Called from the package's ``__getattr__``, so a warning names its caller's line."""
    home = SERVED.get(package, {}).get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)  # the next lookup is a plain attribute
        return value
    target = RENAMED.get(package, {}).get(name)
    if target is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    warnings.warn(
        f"{package}.{name} is deprecated; use {target} instead.", DeprecationWarning, stacklevel=3
    )
    module, _, attribute = target.rpartition(".")
    return getattr(importlib.import_module(module), attribute)
