"""`Prompt` lives in `promptimus.prompts.prompt`; this path serves the same class."""

from __future__ import annotations

from ..prompts.prompt import Prompt as Prompt

__all__ = ["Prompt"]
