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

from .._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "instrument": "spans",
    "Tracing": "spans",
    "disable_tracing": "spans",
    "enable_tracing": "spans",
    "tracing_disabled": "spans",
    "label_tree": "spans",
    "DEFAULT_MAX_VALUE_CHARS": "spans",
    "track_usage": "usage",
    "UsageReport": "usage",
    "PathUsage": "usage",
    "budget": "budget",
    "Budget": "budget",
    "Pricing": "pricing",
    "cost_of": "pricing",
    "absolute_path": "module_path",
}
_SUBMODULES = {"auto", "conventions", "spans", "usage", "budget", "pricing", "module_path"}

if TYPE_CHECKING:
    from .budget import Budget as Budget
    from .budget import budget as budget
    from .module_path import absolute_path as absolute_path
    from .pricing import Pricing as Pricing
    from .pricing import cost_of as cost_of
    from .spans import DEFAULT_MAX_VALUE_CHARS as DEFAULT_MAX_VALUE_CHARS
    from .spans import Tracing as Tracing
    from .spans import disable_tracing as disable_tracing
    from .spans import enable_tracing as enable_tracing
    from .spans import instrument as instrument
    from .spans import label_tree as label_tree
    from .spans import tracing_disabled as tracing_disabled
    from .usage import PathUsage as PathUsage
    from .usage import UsageReport as UsageReport
    from .usage import track_usage as track_usage

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals(), submodules=_SUBMODULES)

__all__ = sorted(_LAZY)
