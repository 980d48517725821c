"""One call from a promptimus module tree to a Phoenix project.

`register` builds an OpenTelemetry `TracerProvider` with an OTLP/HTTP exporter pointed at a
Phoenix collector and turns on `promptimus.tracing` for it; `trace` does the same and names one
module tree (the original promptimus' `trace(module, module_name, ...)`). Spans are exported by a
batch span processor in a background thread, so a traced call never waits for the network; call
`force_flush()` / `shutdown()` on the returned provider before the process exits.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from openinference.semconv.resource import ResourceAttributes
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

from promptimus.core import Module
from promptimus.errors import InvalidArgument
from promptimus.observe.pricing import Pricing
from promptimus.tracing import instrument

__all__ = ["DEFAULT_ENDPOINT", "register", "trace"]

DEFAULT_ENDPOINT = "http://localhost:6006/v1/traces"
_TRACES_PATH = "/v1/traces"


def _endpoint(endpoint: str | None) -> str:
    """An explicit endpoint, else `PHOENIX_COLLECTOR_ENDPOINT` (a base URL), else localhost."""
    if endpoint is None:
        base = os.environ.get("PHOENIX_COLLECTOR_ENDPOINT")
        if not base:
            return DEFAULT_ENDPOINT
        endpoint = base
    endpoint = endpoint.rstrip("/")
    if not endpoint.startswith(("http://", "https://")):
        raise InvalidArgument(
            f"Phoenix endpoint {endpoint!r} must be an http(s) URL such as {DEFAULT_ENDPOINT!r} "
            "(the OTLP/HTTP collector; gRPC is not used by this plugin)."
        )
    return endpoint if endpoint.endswith(_TRACES_PATH) else endpoint + _TRACES_PATH


def register(
    endpoint: str | None = None,
    project_name: str | None = None,
    *,
    batch: bool = True,
    headers: Mapping[str, str] | None = None,
    api_key: str | None = None,
    set_global_tracer_provider: bool = False,
    pricing: Pricing | None = None,
    max_value_chars: int | None = None,
    timeout: float = 10.0,
) -> TracerProvider:
    """Export promptimus spans to Phoenix; returns the tracer provider (flush / shut it down).

    - `endpoint`: the collector URL (default `PHOENIX_COLLECTOR_ENDPOINT`, else
      `http://localhost:6006/v1/traces`); a base URL gets `/v1/traces` appended.
    - `project_name`: the Phoenix project (default `PHOENIX_PROJECT_NAME`, else `default`).
    - `batch`: export in the background with a batch span processor (the default); False
      exports each span as it ends (for scripts and debugging; it blocks the caller).
    - `api_key` / `headers`: for Phoenix Cloud or an authenticated server (default
      `PHOENIX_API_KEY`). They go into request headers only, never into spans or resources.
    - `pricing`: `{model: (input, output[, cached_input])}` per million tokens, to put
      `llm.cost.*` on LLM spans.
    """
    project = project_name or os.environ.get("PHOENIX_PROJECT_NAME") or "default"
    request_headers = dict(headers or {})
    key = api_key or os.environ.get("PHOENIX_API_KEY")
    if key:
        request_headers.setdefault("authorization", f"Bearer {key}")
    exporter = OTLPSpanExporter(
        endpoint=_endpoint(endpoint), headers=request_headers or None, timeout=timeout
    )
    provider = TracerProvider(
        resource=Resource.create(
            {ResourceAttributes.PROJECT_NAME: project, "service.name": "promptimus"}
        )
    )
    processor = BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    if set_global_tracer_provider:
        from opentelemetry import trace as otel_trace

        otel_trace.set_tracer_provider(provider)
    options: dict[str, Any] = {"pricing": pricing}
    if max_value_chars is not None:
        options["max_value_chars"] = max_value_chars
    tracing = instrument(provider, **options)
    if key:
        tracing.add_secrets(key)
    return provider


def trace(
    module: Module,
    module_name: str | None = None,
    pricing: Pricing | None = None,
    **provider_kwargs: Any,
) -> TracerProvider:
    """Trace `module` into Phoenix (the original promptimus' entry point).

    `module_name` names the tree's root span (`module_name`, `module_name.agent`...; default
    `root`); `pricing` adds costs to LLM spans; `provider_kwargs` go to `register`
    (`endpoint`, `project_name`, `batch`, `headers`, `api_key`...). Every module call in the
    process is traced from then on (the seam is process-wide); use
    `promptimus.tracing.disable_tracing(tree)` for a tree you want left out.
    """
    if not isinstance(module, Module):
        raise InvalidArgument(f"trace() needs a promptimus Module, got {type(module).__name__}.")
    provider = register(pricing=pricing, **provider_kwargs)
    if module_name:
        from promptimus.tracing import label_tree

        label_tree(module, module_name)
    return provider
