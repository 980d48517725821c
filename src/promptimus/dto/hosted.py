"""`HostedToolCall`: a tool call the provider's own server ran (nothing runs locally)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class HostedToolCall(BaseModel):
    """One call of a tool the provider hosts (the Responses API's `web_search_call`,
    `file_search_call`, `code_interpreter_call`, ...), as the server returned it.

    `provider` names the API that ran it ("openai-responses"); only that provider sends it back,
    the others skip it. `type` is the item's type, `id` its id, `status` its status, `name` the
    tool's name as the run record and the board show it ("web_search"), and `item` the whole
    item verbatim (its query, results or code and output)."""

    model_config = ConfigDict(frozen=True)

    provider: str
    type: str
    id: str | None = None
    status: str | None = None
    name: str = ""
    item: dict[str, Any] = Field(default_factory=dict)
