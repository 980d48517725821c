"""Tools that change while an agent lives: an MCP server's list, re-read at every step.

An agent takes tool sources (`ToolSource`, e.g. an `MCPToolset`) beside plain tools. A source
that can change (`LiveToolSource`: a `tools_version` that grows when its list changes, and
`refreshing`, the re-listing in flight if any) is read again before each LLM call: a cheap read
of a number, no request to the server. When the number moved, the agent's `tools` (the
`ModuleDict` that checkpoints and digests see) gains the source's new tools and loses the ones
it dropped, so the model is offered exactly the server's current tools, and a call to a tool
that disappeared is refused as an unknown tool. A re-listing in flight (the server said its list
changed) is awaited first, so the step after a tool call that changed the list sees the change.
A new remote tool whose name a local tool has already keeps out, with a warning.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable
from typing import Any, Protocol, runtime_checkable

from ..core import ModuleDict
from ..tools.tool import Tool

__all__ = ["LiveToolSource", "LiveTools"]

log = logging.getLogger("promptimus.agents")


@runtime_checkable
class LiveToolSource(Protocol):
    """A `ToolSource` whose tools may change: `tools_version` grows at each change, and
    `refreshing` is the update in flight (None or done when there is none)."""

    tools_version: int
    refreshing: Awaitable[Any] | None

    def expand_tools(self) -> Iterable[Tool]: ...


class LiveTools:
    """The live sources of one agent and the tool names they contributed."""

    __slots__ = ("_from_sources", "_seen", "generation", "sources")

    def __init__(self, items: Iterable[Any], tools: ModuleDict) -> None:
        live = (item for item in items if not isinstance(item, Tool))
        self.sources = tuple(item for item in live if isinstance(item, LiveToolSource))
        self._seen = self._versions()
        self._from_sources = {
            tool.name for source in self.sources for tool in source.expand_tools()
        } & set(tools)
        self.generation = 0
        """Grows each time the agent's tools change (a run compares it with what it built)."""

    def _versions(self) -> tuple[int, ...]:
        return tuple(source.tools_version for source in self.sources)

    async def sync(self, tools: ModuleDict) -> None:
        """Bring `tools` up to date with the sources (waiting for a re-listing in flight)."""
        for source in self.sources:
            pending = source.refreshing
            if pending is not None and not (isinstance(pending, asyncio.Future) and pending.done()):
                await asyncio.shield(pending)
        versions = self._versions()
        if versions == self._seen:
            return
        self._seen = versions
        fresh: dict[str, Tool] = {}
        for source in self.sources:
            for tool in source.expand_tools():
                fresh.setdefault(tool.name, tool)
        for name in self._from_sources - fresh.keys():
            if name in tools:
                del tools[name]
        added: set[str] = set()
        for name, tool in fresh.items():
            current = tools.get(name)
            if current is tool:
                added.add(name)
                continue
            if current is not None and name not in self._from_sources:
                log.warning(
                    "the tool %r of %s is not offered: a local tool of the agent has that name",
                    name,
                    getattr(tool, "origin", "a tool source"),
                )
                continue
            tools[name] = tool
            added.add(name)
        self._from_sources = added
        self.generation += 1
