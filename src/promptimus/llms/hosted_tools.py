"""`refuse_hosted_tools`: a provider whose API runs no tools itself refuses a hosted one.

A hosted tool (`promptimus.tools.HostedTool`, or its ``{"type": "web_search", ...}`` entry) is
run by the server of the Responses API only; any other API would refuse it or, worse, ignore
it. Each such provider checks its ``tools`` here, before any request is sent.
"""

from __future__ import annotations

from typing import Any

from ..errors import HostedToolUnsupported

__all__ = ["refuse_hosted_tools"]

_OWN_TYPES = frozenset({"function", "custom"})
"""The ``tools`` entry types a chat API defines for tools the caller runs."""


def _hosted_type(entry: Any) -> str | None:
    """The hosted tool type of a ``tools`` entry, or None for a tool the caller runs."""
    if isinstance(entry, dict):
        kind = entry.get("type")
        # a tool of the provider's own shape has a name (Anthropic's server tools too)
        if isinstance(kind, str) and kind not in _OWN_TYPES and "name" not in entry:
            return kind
        return None
    to_openai = getattr(entry, "to_openai", None)
    if callable(to_openai) and isinstance(getattr(entry, "type", None), str):
        return str(entry.type)
    return None


def refuse_hosted_tools(tools: Any, where: str) -> None:
    """Raise `HostedToolUnsupported` when ``tools`` holds a hosted tool; ``where`` names the
    provider for the message."""
    if not isinstance(tools, list | tuple):
        return
    for entry in tools:
        kind = _hosted_type(entry)
        if kind is not None:
            raise HostedToolUnsupported(
                f"The {where} has no hosted tools, so it cannot run {kind!r} (a tool the "
                "server runs): use promptimus.llms.OpenAIResponses (model "
                "'openai-responses:<model>') for hosted tools, or give a Tool of your own."
            )
