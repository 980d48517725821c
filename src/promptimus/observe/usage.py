"""Usage and cost per module path.

    with pm.track_usage(pricing=PRICING) as usage:
        await agent("What's the weather in Oslo?")
    usage.by_path["root.predictor.prompt"].completion_tokens
    usage.total.total_tokens, usage.cost

Every LLM and embedding call made inside the `with` block — in this task or in tasks started
inside it (`asyncio.gather`, `create_task`) — is added under the path of the module that made
it. Concurrent blocks each see only their own calls. Nothing is imported from OpenTelemetry.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from ..core.hooks import RemovableHandle
from ..dto import Usage
from .module_path import absolute_path
from .pricing import Pricing, check_pricing, cost_of
from .provider_calls import ProviderCall, register_provider_call_observer

__all__ = ["PathUsage", "UsageReport", "track_usage"]


@dataclass
class PathUsage:
    """Requests and tokens of one module path (or of everything, as `UsageReport.total`).

    `cost` is None when no pricing was given or a model used here has no price.
    `requests_by_kind` counts requests per call kind ("llm", "embedding");
    `requests_by_model` per model. `cache_hits` counts the replies served by a response cache
    (`CachedLLM`): they are no request and no token.
    """

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = 0.0
    cache_hits: int = 0
    requests_by_kind: dict[str, int] = field(default_factory=dict)
    requests_by_model: dict[str, int] = field(default_factory=dict)

    def add(
        self, kind: str, model: str | None, requests: int, usage: Usage | None, cost: float | None
    ) -> None:
        self.requests += requests
        self.requests_by_kind[kind] = self.requests_by_kind.get(kind, 0) + requests
        if model is not None:
            self.requests_by_model[model] = self.requests_by_model.get(model, 0) + requests
        if usage is not None:
            self.cache_hits += usage.cache_hit
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            self.cached_tokens += usage.cached_tokens
            self.reasoning_tokens += usage.reasoning_tokens
            self.total_tokens += usage.total_tokens or usage.prompt_tokens + usage.completion_tokens
        self.cost = None if self.cost is None or cost is None else self.cost + cost


class UsageSink(Protocol):
    """Something that is told about every finished call in its context (a report, a budget)."""

    def before(self, call: ProviderCall) -> None: ...

    def after(self, path: str, call: ProviderCall) -> None: ...


_sinks: contextvars.ContextVar[tuple[UsageSink, ...]] = contextvars.ContextVar(
    "promptimus_usage_sinks", default=()
)
_KINDS = frozenset({"llm", "embedding"})


class _Observer:
    def on_start(self, call: ProviderCall) -> None:
        pass

    def before_send(self, call: ProviderCall) -> None:
        if call.kind in _KINDS:
            for sink in _sinks.get():
                sink.before(call)

    def on_end(self, call: ProviderCall) -> None:
        sinks = _sinks.get()
        if not sinks or call.kind not in _KINDS:
            return
        path = absolute_path(call.module) if call.module is not None else "root"
        for sink in sinks:
            sink.after(path, call)


_handle: RemovableHandle | None = None


@contextmanager
def collecting(sink: UsageSink) -> Iterator[None]:
    """Tell `sink` about every LLM/embedding call made inside the block."""
    global _handle
    if _handle is None:
        _handle = register_provider_call_observer(_Observer())
    token = _sinks.set((*_sinks.get(), sink))
    try:
        yield
    finally:
        _sinks.reset(token)


class UsageReport:
    """What `track_usage` collects: `by_path`, `total`, `cost`."""

    def __init__(self, pricing: Pricing | None = None) -> None:
        self.pricing = check_pricing(pricing)
        self.by_path: dict[str, PathUsage] = {}
        self.total = PathUsage(cost=None if self.pricing is None else 0.0)

    @property
    def cost(self) -> float | None:
        """Total cost, or None without pricing or when some model's price is unknown."""
        return self.total.cost

    def unpriced_models(self) -> set[str]:
        """Models used here that the pricing table has no price for."""
        known = self.pricing or {}
        return {m for m in self.total.requests_by_model if m not in known}

    def before(self, call: ProviderCall) -> None:
        pass

    def after(self, path: str, call: ProviderCall) -> None:
        usage = call.usage
        cost = cost_of(self.pricing, call.model, usage) if usage is not None else None
        if usage is None and self.pricing is not None and call.error is not None:
            cost = 0.0  # a failed request that reported nothing used nothing we know of
        entry = self.by_path.get(path)
        if entry is None:
            entry = self.by_path[path] = PathUsage(cost=None if self.pricing is None else 0.0)
        requests = call.request_count
        entry.add(call.kind, call.model, requests, usage, cost)
        self.total.add(call.kind, call.model, requests, usage, cost)

    def table(self) -> str:
        """A plain-text table: one row per path, then the total."""
        rows = [("path", "requests", "prompt", "completion", "total", "cost")]
        for path, entry in [*sorted(self.by_path.items()), ("TOTAL", self.total)]:
            cost = "unknown" if entry.cost is None else f"{entry.cost:.6f}"
            rows.append(
                (
                    path,
                    str(entry.requests),
                    str(entry.prompt_tokens),
                    str(entry.completion_tokens),
                    str(entry.total_tokens),
                    cost,
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        return "\n".join(
            "  ".join(
                cell.ljust(w) if i == 0 else cell.rjust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
            for row in rows
        )

    def __repr__(self) -> str:
        return (
            f"UsageReport(paths={len(self.by_path)}, requests={self.total.requests}, "
            f"total_tokens={self.total.total_tokens}, cost={self.cost!r})"
        )


@contextmanager
def track_usage(pricing: Pricing | None = None) -> Iterator[UsageReport]:
    """Collect the usage (and, with `pricing`, the cost) of every LLM and embedding call made
    inside the block, per module path. See the module docstring."""
    report = UsageReport(pricing)
    with collecting(report):
        yield report
