"""Provider calls live in `promptimus.observe.provider_calls`, the observation tier above the
core; this path serves the same names, imported on first use, so the core imports nothing from
above it."""

from __future__ import annotations

from .._lazy import lazy_exports

_MOVED = "promptimus.observe.provider_calls"
_NAMES = (
    "ProviderCall",
    "ProviderCallObserver",
    "current_provider_call",
    "provider_call",
    "register_provider_call_observer",
    "report_call_event",
    "report_event",
    "report_usage",
)

__all__ = list(_NAMES)
__getattr__, __dir__ = lazy_exports(__name__, dict.fromkeys(_NAMES, _MOVED), globals())
