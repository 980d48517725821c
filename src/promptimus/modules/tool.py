"""The original promptimus' `promptimus.modules.tool`. Tools now live in `promptimus.tools` and
agents in `promptimus.agents`; each name imported from here warns once with its new home."""

from __future__ import annotations

from promptimus._lazy import deprecated_exports

__getattr__ = deprecated_exports(
    __name__,
    {
        "Tool": "promptimus.tools.Tool",
        "SupportsHandoff": "promptimus.tools.SupportsHandoff",
        "ToolCallingAgent": "promptimus.agents.ToolCallingAgent",
        "OpenaiToolCallingAgent": "promptimus.agents.OpenaiToolCallingAgent",
    },
)
