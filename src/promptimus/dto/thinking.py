"""`ThinkingBlock`: a piece of a model's thinking that its provider needs back verbatim."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ThinkingBlock(BaseModel):
    """One block of thinking as the provider returned it, kept so the next request of a tool
    loop can send it back unchanged (Anthropic refuses a tool result whose thinking lost its
    `signature`; Gemini wants each part's thought signature back on the same part).

    `provider` names the API that wrote the block ("anthropic", "gemini", "openai-responses");
    only that provider sends it back, the others skip it. `text` is the readable thinking (empty
    when the provider keeps it hidden; a Responses reasoning item's summary), `signature` the
    opaque token that authenticates it, and `redacted` the encrypted payload (an Anthropic
    `redacted_thinking` block; a Responses reasoning item's `encrypted_content`). `id` is the
    provider's own id of the item (a Responses `rs_...` id), sent back only where the server can
    resolve it (a stored response); a stateless request sends the encrypted payload instead.
    """

    model_config = ConfigDict(frozen=True)

    provider: str
    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    id: str | None = None
