"""Prompt templates: `str.format`-style `{name}` fields and nothing more.

Only plain identifiers are allowed — no attribute access (`{user.__class__}`), indexing
(`{items[0]}`), positional fields, conversions or format specs — so a template loaded from a
checkpoint cannot reach into the objects it is formatted with. Literal braces are `{{` and `}}`.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Mapping
from typing import Any

from ..errors import PromptFormatError

_formatter = string.Formatter()


@functools.lru_cache(maxsize=1024)
def parse_template(template: str) -> tuple[tuple[str, str | None], ...]:
    """Split a template into `(literal_text, field_name_or_None)` pieces (cached)."""
    pieces: list[tuple[str, str | None]] = []
    try:
        parsed = list(_formatter.parse(template))
    except ValueError as exc:
        raise PromptFormatError(
            f"Prompt template is malformed ({exc}); write literal braces as '{{{{' and '}}}}'."
        ) from None
    for literal, field, spec, conversion in parsed:
        if field is None:
            pieces.append((literal, None))
            continue
        if not field.isidentifier() or spec or conversion:
            shown = "{" + field + (f"!{conversion}" if conversion else "")
            shown += (f":{spec}" if spec else "") + "}"
            raise PromptFormatError(
                f"Prompt template field {shown} is not allowed: only plain {{name}} fields are "
                "(no attribute access, indexing, positional fields, conversions or format specs). "
                "Write literal braces as '{{' and '}}'."
            )
        pieces.append((literal, field))
    return tuple(pieces)


def template_fields(template: str) -> list[str]:
    return [field for _, field in parse_template(template) if field is not None]


def format_template(template: str, variables: Mapping[str, Any], where: str = "prompt") -> str:
    """Fill `{name}` fields from `variables`; a missing one raises `PromptFormatError` naming it."""
    out: list[str] = []
    for literal, field in parse_template(template):
        out.append(literal)
        if field is None:
            continue
        try:
            out.append(str(variables[field]))
        except KeyError:
            missing = [f for f in template_fields(template) if f not in variables]
            given = ", ".join(sorted(variables)) or "none"
            raise PromptFormatError(
                f"{where} needs the template variable(s) {', '.join(missing)}; pass them as "
                f"keyword arguments (given: {given})."
            ) from None
    return "".join(out)
