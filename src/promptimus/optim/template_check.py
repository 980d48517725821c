"""Refuse a proposed value that would break the template it replaces, or a message role that
is not one."""

from __future__ import annotations

from ..dto import MessageRole
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


_ROLES = frozenset(role.value for role in MessageRole)


def is_role(path: str, value: object) -> bool:
    """Whether parameter `path` holding `value` is a prompt's message role (`...role`, holding
    "system", "user", ...): configuration that takes a role's name, not text to rewrite."""
    return path.rpartition(".")[2] == "role" and value in _ROLES


def role_break(path: str, current: object, candidate: str) -> str | None:
    """Why `candidate` cannot replace the message role `current` (None when it can)."""
    if is_role(path, current) and candidate not in _ROLES:
        return f"a message role takes one of {', '.join(sorted(_ROLES))}"
    return None
