"""The template helpers live in `promptimus.prompts.template`; this path serves the same names,
imported on first use, so the bottom tier imports nothing from above it."""

from __future__ import annotations

from ._lazy import lazy_exports

_MOVED = "promptimus.prompts.template"
_NAMES = ("format_template", "parse_template", "template_fields")

__all__ = list(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(_NAMES, _MOVED), globals())
