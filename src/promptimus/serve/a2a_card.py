"""The A2A agent card of a served module: its name and description, one skill for the module
and one per tool (each described by its docstring), the JSON-RPC address it answers at, and the
bearer scheme when the server takes tokens.

The card is built per request, since its address is where the client reached this server
(behind a mount prefix too). It is public, as A2A discovery expects: it names the tools and
what their docstrings say, nothing else of the module.
"""

from __future__ import annotations

from typing import Any

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_1_0, TransportProtocol

from .._version import __version__
from ..tools.base import Tool
from .served import Served

__all__ = ["A2A_PATH", "agent_card"]

A2A_PATH = "/a2a"
BEARER = "bearer"


def agent_card(served: Served, base_url: str) -> AgentCard:
    """The card of `served`, answering at `base_url` + `A2A_PATH`."""
    tokens = served.callers.required
    card = AgentCard(
        name=served.name,
        description=served.description or f"The promptimus module {served.name}.",
        supported_interfaces=[
            AgentInterface(
                url=base_url.rstrip("/") + A2A_PATH,
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_1_0,
            )
        ],
        version=__version__,
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=_skills(served),
    )
    if tokens:
        card.security_schemes[BEARER].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="bearer",
                    description="The token this server's operator gave you.",
                )
            )
        )
        card.security_requirements.append(SecurityRequirement(schemes={BEARER: StringList()}))
    return card


def _skills(served: Served) -> list[AgentSkill]:
    skills = [
        AgentSkill(
            id=served.name,
            name=served.name,
            description=served.description or f"Talk with {served.name}.",
            tags=["conversation"],
        )
    ]
    for tool in _tools(served.module):
        skills.append(
            AgentSkill(
                id=f"{served.name}.{tool.name}",
                name=tool.name,
                description=tool.model_description or f"The tool {tool.name}.",
                tags=["tool"],
            )
        )
    return skills


def _tools(module: Any) -> list[Tool]:
    tools = getattr(module, "tools", None)
    values = getattr(tools, "values", None)
    if not callable(values):
        return []
    return [tool for tool in values() if isinstance(tool, Tool)]
