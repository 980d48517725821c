"""Refuse a proposed value that would break the template it replaces."""

from __future__ import annotations

from ..errors import PromptFormatError
from ..prompts.template import template_fields


def template_break(current: str, candidate: str) -> str | None:
    """Why `candidate` cannot replace `current` (None when it can): it must keep exactly the
    template variables `{name}` of `current`, so the callers' keyword arguments still fit."""
    try:
        wanted = set(template_fields(current))
    except PromptFormatError:
        return None  # the current value is not a template; nothing to keep
    try:
        got = set(template_fields(candidate))
    except PromptFormatError as exc:
        return f"malformed template: {exc}"
    if got == wanted:
        return None
    parts = []
    if wanted - got:
        parts.append("drops " + ", ".join("{" + f + "}" for f in sorted(wanted - got)))
    if got - wanted:
        parts.append("adds " + ", ".join("{" + f + "}" for f in sorted(got - wanted)))
    return "template variables changed: " + "; ".join(parts)
