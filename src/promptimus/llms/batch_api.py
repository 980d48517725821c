"""What a provider's batch API takes and gives, for batch evaluation.

A provider with a batch API has a ``batch_api()`` method returning an object with this shape
(`BatchAPI`): ``run(requests, waiting)`` sends the requests as one batch, waits for it (polling
every ``waiting.poll_interval`` seconds through ``waiting.sleep``, telling ``waiting.on_status``
how far it got) and gives one reply per request, in order, or the error that request got
(`BatchRequestFailed`, or the `MalformedReply` its reply is). A batch that expired or failed as
a whole raises (`BatchExpired`, `BatchFailed`). ``discount`` is the part of the direct price a
batched token costs (0.5: half); ``key`` says which requests may share one batch (one model at
one address)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from promptimus.argument_checks import finite_number
from promptimus.dto import Message
from promptimus.errors import BatchExpired, InvalidArgument
from promptimus.transport.secret_scrub import shown_url

__all__ = [
    "BatchAPI",
    "BatchRequest",
    "BatchStatus",
    "BatchWaiting",
    "ProviderBatch",
    "wait_for_batch",
]


class ProviderBatch:
    """What each provider's batch API shares: the provider whose requests it builds, the
    batch price (half the direct one), and which requests may share one batch (those of one
    provider object: one model at one address)."""

    discount = 0.5
    kind: ClassVar[str]  # names the API in `key`
    default_host: ClassVar[str]  # shown where the provider was given no address

    def __init__(self, provider: Any) -> None:
        self._provider = provider

    @property
    def key(self) -> Hashable:
        return (self.kind, id(self._provider))

    def _where(self) -> str:
        return shown_url(self._provider.base_url) or self.default_host


@dataclass(frozen=True)
class BatchRequest:
    """One model request of a batch: the messages and the request options, as a direct
    ``achat(history, **params)`` would take them."""

    history: list[Message]
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchStatus:
    """How far a batch got, as its provider last said: ``done`` of ``total`` requests answered
    (``failed`` of them with an error), ``status`` in the provider's own word."""

    provider: str
    batch_id: str
    status: str
    done: int
    total: int
    failed: int = 0


def _no_status(status: BatchStatus) -> None:
    return None


@dataclass(frozen=True)
class BatchWaiting:
    """How to wait for a batch: poll every ``poll_interval`` seconds (``sleep`` is awaited
    between polls: a test passes one that only counts), tell ``on_status`` after each poll, and
    give up after ``max_polls`` polls (None: wait as long as the provider keeps the batch; it
    ends it as expired after its completion window)."""

    poll_interval: float = 30.0
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    on_status: Callable[[BatchStatus], Any] = _no_status
    max_polls: int | None = None

    def __post_init__(self) -> None:
        finite_number(self.poll_interval, "poll_interval (seconds between polls)", positive=True)
        if not callable(self.sleep) or not callable(self.on_status):
            raise InvalidArgument(
                "sleep must be an async function of seconds, and on_status a function of a "
                "BatchStatus."
            )
        if self.max_polls is not None and (
            isinstance(self.max_polls, bool)
            or not isinstance(self.max_polls, int)
            or self.max_polls < 1
        ):
            raise InvalidArgument(
                f"max_polls must be a whole number of polls (1 or more) or None, got "
                f"{self.max_polls!r}."
            )


class BatchAPI(Protocol):
    """A provider's batch API (see the module docstring)."""

    discount: float
    """The part of the direct price a batched token costs (0.5 for OpenAI and Anthropic)."""

    @property
    def key(self) -> Hashable:
        """Requests whose APIs have equal keys go into one batch."""
        ...

    async def run(
        self, requests: list[BatchRequest], waiting: BatchWaiting
    ) -> list[Message | BaseException]: ...


async def wait_for_batch(
    batch: Any,
    refresh: Callable[[Any], Awaitable[Any]],
    running: Callable[[Any], bool],
    status: Callable[[Any], BatchStatus],
    cancel: Callable[[Any], Awaitable[Any]],
    waiting: BatchWaiting,
) -> Any:
    """Poll ``batch`` (``refresh(batch)`` gives it anew) until it is not ``running``, telling
    ``waiting.on_status`` each time; the batch as it ended. Stopped waiting (cancelled, or out
    of polls: `BatchExpired`), it asks the provider to ``cancel`` it, so nothing goes on being
    paid for."""
    polls = 0
    try:
        while running(batch):
            if waiting.max_polls is not None and polls >= waiting.max_polls:
                shown = status(batch)
                raise BatchExpired(
                    f"the {shown.provider} batch {shown.batch_id} was not finished after "
                    f"{polls} polls (max_polls) with {shown.done} of {shown.total} requests "
                    "answered: it was cancelled. Allow more polls, a longer poll_interval, or "
                    "evaluate fewer examples."
                )
            await waiting.sleep(waiting.poll_interval)
            batch = await refresh(batch)
            polls += 1
            waiting.on_status(status(batch))
    except BaseException:
        if running(batch):
            with contextlib.suppress(Exception):  # best effort: the reason we stopped says more
                await asyncio.shield(cancel(batch))
        raise
    return batch
