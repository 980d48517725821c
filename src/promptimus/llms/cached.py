"""``CachedLLM``: answer a request seen before from a cache instead of the model.

    llm = CachedLLM(OpenAILike("gpt-4o-mini", call_kwargs={"temperature": 0}),
                    SQLiteCache("replies.sqlite"))

Made for evaluation and tests: re-running a dataset or a test suite costs nothing for the
requests already answered, and gives the same replies.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from pydantic import ValidationError

from promptimus.dto import Message, MessageDelta, Usage
from promptimus.llms.accumulator import MessageAccumulator
from promptimus.llms.cache_key import (
    is_deterministic,
    provider_identity,
    request_key,
    request_options,
)
from promptimus.llms.capabilities import ProviderCapabilities, capabilities
from promptimus.llms.response_cache import ResponseCache
from promptimus.llms.scripted import split_message
from promptimus.protocols import LLMProtocol

__all__ = ["CachedLLM"]

log = logging.getLogger("promptimus.llms")

_Slot = tuple[int, str]  # (id of the event loop, key): one flight per request per loop


class CachedLLM:
    """Serves ``llm``'s replies from ``cache`` (`MemoryCache`, `SQLiteCache`, or any
    `ResponseCache`) when the same request was answered before.

    - The key hashes everything that determines the reply (see `promptimus.llms.cache_key`):
      the provider's class, model and ``base_url`` (not its API key), the messages (images and
      tool calls included), the tools and every other request option.
    - Only requests that are deterministic by their options are cached: ``temperature`` 0 (per
      call or in the provider's ``call_kwargs``). ``cache_nondeterministic=True`` caches every
      request: a replay then returns the one sampled answer that was stored.
    - Stored: a reply ``achat`` returned, or a stream read to its end that finished properly
      (it had a ``finish_reason``). Never an error, nor a stream that was cut off, failed, or
      was left before its end.
    - A hit is a copy of the stored reply whose ``usage`` is ``Usage(cache_hit=True)`` with
      every count zero: `track_usage` and budgets count no token and no request for it.
      ``model_name`` still names the model that wrote it. A stream hit replays the reply as
      chunks.
    - Concurrent identical requests are sent once (single flight, per event loop): the others
      wait for that one and are served from the cache; if it fails, the next one tries. A
      stream is never waited for (its reader sets its pace, and may be the one waiting): an
      identical request made while it is read is sent on its own.
    - ``hits``, ``misses`` (requests sent to the model that could have been cached) and
      ``uncacheable`` (requests sent past the cache, e.g. at temperature 1) count the calls.
    """

    def __init__(
        self, llm: LLMProtocol, cache: ResponseCache, *, cache_nondeterministic: bool = False
    ) -> None:
        self.llm = llm
        self.cache = cache
        self.cache_nondeterministic = cache_nondeterministic
        self.hits = 0
        self.misses = 0
        self.uncacheable = 0
        self._flights: dict[_Slot, asyncio.Event] = {}

    @property
    def model_name(self) -> str:
        return self.llm.model_name

    @property
    def model_names(self) -> tuple[str, ...]:
        """The models that may serve a call (several when the wrapped LLM is a fallback chain)."""
        return tuple(getattr(self.llm, "model_names", None) or (self.llm.model_name,))

    @property
    def capabilities(self) -> ProviderCapabilities:
        """The wrapped provider's record, so what it learns stays with it."""
        return capabilities(self.llm)

    @property
    def call_kwargs(self) -> dict[str, Any]:
        return dict(getattr(self.llm, "call_kwargs", None) or {})

    def cache_identity(self) -> Any:
        return provider_identity(self.llm)

    def __repr__(self) -> str:
        return f"CachedLLM({self.llm!r}, {self.cache!r})"

    # --- answering ---------------------------------------------------------------------------

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        key = self._key(history, kwargs)
        if key is None:
            return await self.llm.achat(history, **kwargs)
        hit, flight = await self._join(key)
        if hit is not None:
            return hit
        try:
            reply = await self.llm.achat(history, **kwargs)
            await self._store(key, reply)
        finally:
            self._land(flight)
        return reply

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        key = self._key(history, kwargs)
        if key is None:
            async for delta in self.llm.astream(history, **kwargs):
                yield delta
            return
        # a stream leads no flight: its pace is its reader's, so nobody may wait for it
        hit, flight = await self._join(key, lead=False)
        if hit is not None:
            for delta in split_message(hit):
                yield delta
            return
        try:
            received = MessageAccumulator()
            async for delta in self.llm.astream(history, **kwargs):
                received.add(delta)
                yield delta
            if received.complete:
                await self._store(key, received.message())
        finally:
            self._land(flight)

    # --- the cache ---------------------------------------------------------------------------

    def _key(self, history: list[Message], kwargs: dict[str, Any]) -> str | None:
        """The request's key, or None when it must not be cached."""
        options = request_options(self.llm, kwargs)
        if not self.cache_nondeterministic and not is_deterministic(options):
            self.uncacheable += 1
            return None
        try:
            return request_key(self.llm, history, options)
        except (TypeError, ValueError) as exc:
            log.debug("CachedLLM: request not cached, an option is not JSON (%s)", exc)
            self.uncacheable += 1
            return None

    async def _hit(self, key: str) -> Message | None:
        text = await self.cache.get(key)
        if text is None:
            return None
        try:
            reply = Message.model_validate_json(text)
        except ValidationError as exc:
            log.warning("CachedLLM: a cache entry is not a reply (%s); treated as a miss", exc)
            return None
        reply.usage = Usage(cache_hit=True)
        self.hits += 1
        return reply

    async def _join(self, key: str, *, lead: bool = True) -> tuple[Message | None, _Slot | None]:
        """A hit, or the flight this call now leads (with ``lead``): an identical request
        already in flight on this loop is waited for (its reply is then a hit), so it is sent
        once."""
        slot = (id(asyncio.get_running_loop()), key)
        while True:
            hit = await self._hit(key)
            if hit is not None:
                return hit, None
            leader = self._flights.get(slot)
            if leader is None:
                self.misses += 1
                if not lead:
                    return None, None
                self._flights[slot] = asyncio.Event()
                return None, slot
            await leader.wait()  # bounded by the leader's own request (its timeout, retries)

    def _land(self, slot: _Slot | None) -> None:
        """End the flight this call led: its followers look in the cache again."""
        flight = self._flights.pop(slot, None) if slot is not None else None
        if flight is not None:
            flight.set()

    async def _store(self, key: str, reply: Message) -> None:
        if reply.model_name is None:
            reply = reply.model_copy(update={"model_name": self.llm.model_name})
        await self.cache.put(key, reply.model_dump_json(exclude_defaults=True))
