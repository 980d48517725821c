"""Prompts: what renders the messages an LLM call starts with.

`Prompt` (a checkpointed template, with optional example turns), `DynamicPrompt` (a system prompt
computed from the run context for every call), the interface both render through (`BasePrompt`:
`await prompt.prepare(ctx)`, `await prompt.arender(...)`) and the template helpers
(`format_template`, `parse_template`, `template_fields`: plain `{name}` fields and nothing more).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "BasePrompt": "base_prompt",
    "PreparedPrompt": "base_prompt",
    "Prompt": "prompt",
    "DynamicPrompt": "dynamic_prompt",
    "PromptFn": "dynamic_prompt",
    "format_template": "template",
    "parse_template": "template",
    "template_fields": "template",
}

if TYPE_CHECKING:
    from .base_prompt import BasePrompt as BasePrompt
    from .base_prompt import PreparedPrompt as PreparedPrompt
    from .dynamic_prompt import DynamicPrompt as DynamicPrompt
    from .dynamic_prompt import PromptFn as PromptFn
    from .prompt import Prompt as Prompt
    from .template import format_template as format_template
    from .template import parse_template as parse_template
    from .template import template_fields as template_fields


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = list(_LAZY)
