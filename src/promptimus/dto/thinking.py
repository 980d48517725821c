"""`ThinkingBlock`: a piece of a model's thinking that its provider needs back verbatim."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ThinkingBlock(BaseModel):
    """One block of thinking as the provider returned it, kept so the next request of a tool
    loop can send it back unchanged (Anthropic refuses a tool result whose thinking lost its
    `signature`; Gemini wants each part's thought signature back on the same part).

    `provider` names the API that wrote the block ("anthropic", "gemini"); only that provider
    sends it back, the others skip it. `text` is the readable thinking (empty when the provider
    keeps it hidden), `signature` the opaque token that authenticates it, and `redacted` the
    encrypted payload of an Anthropic `redacted_thinking` block.
    """

    model_config = ConfigDict(frozen=True)

    provider: str
    text: str = ""
    signature: str | None = None
    redacted: str | None = None
