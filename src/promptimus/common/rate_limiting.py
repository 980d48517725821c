"""promptimus 0.1's `promptimus.common.rate_limiting`; `RateLimitedClient` lives in
`promptimus.compat.rate_limiting`."""

from __future__ import annotations

from promptimus.compat.rate_limiting import RateLimitedClient

__all__ = ["RateLimitedClient"]
