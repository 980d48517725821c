"""The library's errors as a command-line user reads them: a hint that names a Python call
(`.with_llm(...)`, `strict=False`) is replaced by the flag that does the same here."""

from __future__ import annotations

from ..errors import CheckpointMismatch, ProviderNotSet

__all__ = ["command_line_message"]

MODEL_HINT = (
    "pass --model MODEL (a model string such as openai:gpt-4o-mini, or --model fake for the "
    "offline stand-in)"
)
PARTIAL_HINT = "Pass --partial to load the matching keys and skip unknown/missing ones."


def command_line_message(exc: BaseException) -> str:
    """`exc`'s message, with the hint a command-line user can act on."""
    text = str(exc)
    if isinstance(exc, ProviderNotSet) and "; call `.with_" in text:
        cause = text.split("; call `.with_", 1)[0]
        if "needs an LLM" in cause:
            return f"{cause}; {MODEL_HINT}."
        return (
            f"{cause}; the command line attaches only a model (--model): attach the rest in "
            "the file that builds the module."
        )
    if isinstance(exc, CheckpointMismatch):
        lines = text.splitlines()
        if lines and lines[-1].startswith("Pass strict=False"):
            return "\n".join([*lines[:-1], PARTIAL_HINT])
    return text
