"""Tracing without a call to `instrument()`: configure a tracer provider, get spans.

Module calls ask `probe()` once OpenTelemetry has been imported (nothing is asked before, so a
process without OpenTelemetry pays one dictionary lookup per call). While the global provider is
OpenTelemetry's placeholder, the answer is "not yet"; once a real one is set (Phoenix, Jaeger,
Langfuse, Logfire, the console exporter...), promptimus instruments itself with the defaults, as
`tracing.instrument()` would. An explicit `instrument(...)` settles it too, and
`PROMPTIMUS_AUTO_TRACING=0` turns the automatic start off.
"""

from __future__ import annotations

import functools
import os
from typing import Any

__all__ = ["AUTO_TRACING_ENV", "probe"]

AUTO_TRACING_ENV = "PROMPTIMUS_AUTO_TRACING"


_unset: Any = None
"""OpenTelemetry's trace module once the probe has seen it with no provider and none named by
the environment: from then on, one attribute read per module call says "not yet"."""


def probe() -> bool:
    """Instrument if a real global tracer provider is set; True once there is nothing left to
    decide (instrumented now or before, or switched off by the environment)."""
    if _unset is not None and _unset._TRACER_PROVIDER is None:
        return False
    return _probe()


def _probe() -> bool:
    global _unset
    if _switched_off():
        return True
    trace = _trace_api()
    if trace is None:  # a partial install: never trace automatically
        return True
    if getattr(trace, "_TRACER_PROVIDER", True) is None and not _provider_from_env():
        # nothing set yet: what `get_tracer_provider()` would find out only after an
        # environment lookup, on every module call until a provider appears
        _unset = trace
        return False
    if isinstance(trace.get_tracer_provider(), _PLACEHOLDERS):
        return False
    from . import spans

    if spans.current() is None:
        spans.instrument()
    return True


_PLACEHOLDERS: tuple[type, ...] = ()


@functools.cache
def _trace_api() -> Any:
    # resolved once: the probe runs on every module call until a provider appears
    global _PLACEHOLDERS
    try:
        from opentelemetry import trace
    except ImportError:
        return None
    _PLACEHOLDERS = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
    return trace


@functools.cache
def _switched_off() -> bool:
    # read once: the probe runs on every module call until a provider appears
    return os.environ.get(AUTO_TRACING_ENV, "").strip().lower() in {"0", "false", "off", "no"}


@functools.cache
def _provider_from_env() -> bool:
    # OpenTelemetry makes the provider this variable names on the first `get_tracer_provider()`
    return "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
