"""`HostedTool`: a tool the provider's own server runs (web search, file search, code interpreter).

Nothing runs locally: the tool goes into the request as the API names it, the server calls it
while it writes the reply, and its calls come back as the reply's `Message.hosted_calls`
(`HostedToolCall`, each item verbatim). Only an API that hosts tools takes one (the Responses
API: `promptimus.llms.OpenAIResponses`).

    search = HostedTool("web_search", search_context_size="low")
    reply = await llm.achat(history, tools=[search.to_openai()])
    reply.hosted_calls[0].item["action"]
"""

from __future__ import annotations

import re
from typing import Any

from promptimus.errors import InvalidArgument

__all__ = ["HostedTool"]

_TYPE = re.compile(r"^[a-z][a-z0-9_]*$")


class HostedTool:
    """A hosted tool of type ``type`` (``"web_search"``, ``"file_search"``,
    ``"code_interpreter"``, or any other type the API names) with its ``config`` fields
    (``vector_store_ids=[...]`` for a file search, ``container={"type": "auto"}`` for the code
    interpreter...), sent as they are."""

    __slots__ = ("config", "type")

    def __init__(self, type: str, /, **config: Any) -> None:
        if not isinstance(type, str) or not _TYPE.match(type) or type == "function":
            raise InvalidArgument(
                f"HostedTool: type must be the API's name of a hosted tool, such as "
                f"'web_search', 'file_search' or 'code_interpreter', got {type!r} (a function "
                "of your own is a Tool)."
            )
        if "type" in config:
            raise InvalidArgument("HostedTool: give the type once, as the first argument.")
        self.type = type
        self.config = dict(config)

    @property
    def name(self) -> str:
        """The name run records show for its calls (the type)."""
        return self.type

    def to_openai(self) -> dict[str, Any]:
        """The request's ``tools`` entry: ``{"type": ..., **config}``."""
        return {"type": self.type, **self.config}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HostedTool):
            return NotImplemented
        return (self.type, self.config) == (other.type, other.config)

    def __hash__(self) -> int:
        return hash(self.type)

    def __repr__(self) -> str:
        fields = "".join(f", {key}={value!r}" for key, value in self.config.items())
        return f"HostedTool({self.type!r}{fields})"
