"""Observability: OpenTelemetry spans, usage and cost per module path, budgets.

    import promptimus as pm
    from promptimus import tracing

    tracing.instrument()                  # spans to the global OpenTelemetry tracer provider
                                          # (automatic once a global provider is set)
    with pm.track_usage(pricing=PRICES) as usage:
        await agent("...")
    print(usage.table())

Spans need the `opentelemetry-api` package (`pip install "promptimus[tracing]"`); usage and
budgets need nothing extra. Importing this package imports no OpenTelemetry module until a span
name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports, moved_modules

# Usage, pricing and budgets moved down to `promptimus.observe`; their old paths here still import.
_MOVED = {
    "usage": "promptimus.observe.usage",
    "budget": "promptimus.observe.budget",
    "pricing": "promptimus.observe.pricing",
    "module_path": "promptimus.observe.module_path",
}
moved_modules(__name__, _MOVED)

_LAZY: dict[str, str] = {
    "instrument": "spans",
    "Tracing": "spans",
    "disable_tracing": "spans",
    "enable_tracing": "spans",
    "tracing_disabled": "spans",
    "label_tree": "spans",
    "DEFAULT_MAX_VALUE_CHARS": "spans",
    "track_usage": "promptimus.observe.usage",
    "UsageReport": "promptimus.observe.usage",
    "PathUsage": "promptimus.observe.usage",
    "budget": "promptimus.observe.budget",
    "Budget": "promptimus.observe.budget",
    "Pricing": "promptimus.observe.pricing",
    "cost_of": "promptimus.observe.pricing",
    "absolute_path": "promptimus.observe.module_path",
}
_SUBMODULES = {"auto", "conventions", "spans", "usage", "budget", "pricing", "module_path"}

if TYPE_CHECKING:
    from ..observe.budget import Budget as Budget
    from ..observe.budget import budget as budget
    from ..observe.module_path import absolute_path as absolute_path
    from ..observe.pricing import Pricing as Pricing
    from ..observe.pricing import cost_of as cost_of
    from ..observe.usage import PathUsage as PathUsage
    from ..observe.usage import UsageReport as UsageReport
    from ..observe.usage import track_usage as track_usage
    from .spans import DEFAULT_MAX_VALUE_CHARS as DEFAULT_MAX_VALUE_CHARS
    from .spans import Tracing as Tracing
    from .spans import disable_tracing as disable_tracing
    from .spans import enable_tracing as enable_tracing
    from .spans import instrument as instrument
    from .spans import label_tree as label_tree
    from .spans import tracing_disabled as tracing_disabled

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals(), submodules=_SUBMODULES)

__all__ = sorted(_LAZY)
