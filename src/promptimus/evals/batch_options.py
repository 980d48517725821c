"""`BatchOptions`: how `evaluate(..., batch=...)` waits for the providers' batches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument
from ..llms.batch_api import BatchStatus, BatchWaiting
from ..observe.pricing import Pricing, check_pricing

__all__ = ["BatchOptions", "batch_options"]


@dataclass(frozen=True)
class BatchOptions:
    """Batch evaluation's settings (``batch=True`` takes the defaults).

    - ``poll_interval``: seconds between two polls of a batch (providers finish most batches
      within minutes to hours, within 24 hours at most).
    - ``sleep``: what is awaited between polls (``asyncio.sleep``; a test passes one that only
      counts, so nothing waits for real).
    - ``on_status``: told the `BatchStatus` of each batch after each poll (the progress bar
      shows it too).
    - ``max_polls``: give up (`BatchExpired`, the batch cancelled) after that many polls of one
      batch; None waits until the provider ends it.
    - ``pricing``: prices per model (as `track_usage` takes them), to show the evaluation's
      cost at the batch price beside the direct price on the report.
    """

    poll_interval: float = 30.0
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    on_status: Callable[[BatchStatus], Any] | None = None
    max_polls: int | None = None
    pricing: Pricing | None = None

    def __post_init__(self) -> None:
        self.waiting()  # checks the numbers and callables where they are given
        if self.on_status is not None and not callable(self.on_status):
            raise InvalidArgument(
                f"on_status must be a function of a BatchStatus, got {self.on_status!r}."
            )
        check_pricing(self.pricing)

    def waiting(self, also: Callable[[BatchStatus], Any] | None = None) -> BatchWaiting:
        """How a provider's batch API is to wait, telling ``also`` of each status too."""
        mine = self.on_status

        def on_status(status: BatchStatus) -> None:
            if also is not None:
                also(status)
            if mine is not None:
                mine(status)

        return BatchWaiting(self.poll_interval, self.sleep, on_status, self.max_polls)


def batch_options(batch: Any) -> BatchOptions | None:
    """``evaluate``'s ``batch`` argument as options: None for False, defaults for True."""
    if batch is False or batch is None:
        return None
    if batch is True:
        return BatchOptions()
    if isinstance(batch, BatchOptions):
        return batch
    raise InvalidArgument(
        f"batch must be True, False or BatchOptions(...), got {type(batch).__name__}: "
        "batch=True sends the model calls through the providers' batch APIs."
    )
