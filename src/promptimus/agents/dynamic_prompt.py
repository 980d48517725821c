"""`DynamicPrompt` lives in `promptimus.prompts.dynamic_prompt`; this path serves the same names."""

from __future__ import annotations

from ..prompts.dynamic_prompt import DynamicPrompt as DynamicPrompt
from ..prompts.dynamic_prompt import PromptFn as PromptFn

__all__ = ["DynamicPrompt", "PromptFn"]
