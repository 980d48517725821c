"""Shared HTTP transport for providers: retries, rate limits, concurrency caps, SDK clients.

Nothing here imports an SDK at import time.
"""

from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.openai_client import OpenAIClientFactory
from promptimus.transport.per_loop import PerLoop
from promptimus.transport.rate_limit import RateLimiter, Reservation
from promptimus.transport.retry import Failure, RetryPolicy, classify, parse_retry_after

__all__ = [
    "ConcurrencyLimit",
    "Failure",
    "OpenAIClientFactory",
    "PerLoop",
    "RateLimiter",
    "Reservation",
    "RetryPolicy",
    "classify",
    "parse_retry_after",
]
