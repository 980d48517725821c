"""The observation seam, above the core and below the providers: provider-call observers, the one
usage aggregate, pricing and budgets.

- `observe.provider_calls`: `provider_call(...)`, the scope a module opens around each request to
  its LLM, embedder or reranker, and the observers registered on it (tracing, usage, budgets).
- `observe.usage`: `collecting(sink)`, the one place usage is gathered — every LLM and embedding
  call in a context, streamed or not, told to each sink open there. `track_usage` (per module
  path), budgets and evaluation totals are sinks on it, so they count the same requests.
- `observe.pricing`, `observe.budget`: prices per model, and `budget(...)` limits.
- `observe.module_path`: the path a call is filed under.

Providers report into it (`report_usage`, `report_call_event`); OpenTelemetry spans
(`promptimus.tracing`) are one more observer on top. Nothing here imports a provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .provider_calls import (
        ProviderCall,
        ProviderCallObserver,
        current_provider_call,
        register_provider_call_observer,
    )

_EXPORTS = {
    "ProviderCall": "provider_calls",
    "ProviderCallObserver": "provider_calls",
    "current_provider_call": "provider_calls",
    "register_provider_call_observer": "provider_calls",
}

__all__ = [
    "ProviderCall",
    "ProviderCallObserver",
    "current_provider_call",
    "register_provider_call_observer",
]

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
