"""The context windows of common models, in tokens, for `Compactor(trigger_fraction=...)`.

A model is looked up by its name without a provider prefix (``openai:gpt-4o`` reads as
``gpt-4o``), the longest entry it starts with winning, so dated snapshots
(``gpt-4o-2024-08-06``, ``claude-sonnet-4-5-20250929``) find their family. A model missing here
needs ``context_window=`` on the compactor.
"""

from __future__ import annotations

__all__ = ["CONTEXT_WINDOWS", "known_context_window"]

CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "gpt-5-nano": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "claude-3": 200_000,
    "claude-3-5": 200_000,
    "claude-3-7": 200_000,
    "claude-haiku-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "gemini-1.5-flash": 1_048_576,
    "gemini-1.5-pro": 2_097_152,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "mistral-large": 131_072,
    "mistral-small": 32_768,
}


def known_context_window(model: str | None) -> int | None:
    """The context window of `model` from `CONTEXT_WINDOWS`; None if it is not known."""
    if not model:
        return None
    name = model.rsplit("/", 1)[-1].lower()
    # "openai:gpt-4o" names a provider first; "llama3.1:8b" (an Ollama tag) does not
    for candidate in (name, name.split(":", 1)[-1]):
        best: str | None = None
        for prefix in CONTEXT_WINDOWS:
            if candidate.startswith(prefix) and (best is None or len(prefix) > len(best)):
                best = prefix
        if best is not None:
            return CONTEXT_WINDOWS[best]
    return None
