"""``FallbackLLM``: try a chain of LLMs in order until one answers.

    llm = FallbackLLM(OpenAILike("gpt-4o-mini"), OpenAILike("llama3", base_url=LOCAL))

Each provider keeps its own retry policy: the chain moves on only once a provider has given up
on a failure that says the provider is in trouble, never on one that says the request is wrong
(see `falls_through`). Which model answered is on every reply (``reply.model_name``) and so in
run records; usage and cost are counted for that model.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from promptimus.dto import Message, MessageDelta
from promptimus.errors import (
    AllProvidersFailed,
    EmptyReply,
    InvalidArgument,
    MalformedReply,
    PromptimusError,
    ProviderUnavailable,
)
from promptimus.llms.capabilities import ProviderCapabilities
from promptimus.observe.provider_calls import current_provider_call, report_call_event
from promptimus.protocols import LLMProtocol
from promptimus.transport.retry import classify

__all__ = ["FallbackLLM", "falls_through"]

log = logging.getLogger("promptimus.llms")

_MAX_REASON = 400  # characters of each provider's error quoted in AllProvidersFailed


def falls_through(error: BaseException) -> bool:
    """Whether ``error`` from one provider lets a `FallbackLLM` try the next one.

    Falls through, since another provider may well answer:
    - `ProviderUnavailable`: unreachable, timed out, rate limited or 5xx after every retry
      (`RetryBudgetExhausted`), a stream cut before its first chunk (`StreamInterrupted`), or a
      nested chain that failed whole (`AllProvidersFailed`);
    - `MalformedReply`: the server answered 200 with something that is not a reply (a proxy's
      error page, a broken server), after its one retry;
    - an error a custom provider raised without translating it, when the retry layer would call
      it transient (a ``ConnectionError``, a ``TimeoutError``, an SDK 5xx or 429).

    Does not fall through, since every provider would fail the same way or the user must act:
    - `RequestRejected` (a 400/422, and `ContextWindowExceeded`): the request itself is wrong;
      401/403/404 too: a wrong key or model name is a configuration error to fix, not an outage
      to hide (and `StructuralOutput` needs to see a rejected ``response_format`` to degrade);
    - `EmptyReply` with ``finish_reason == "length"``: the token budget was too small;
    - `ProviderConfigError` (no API key), any other promptimus error, any bug, a cancellation.
    """
    if isinstance(error, ProviderUnavailable):
        return True
    if isinstance(error, MalformedReply):
        return not (isinstance(error, EmptyReply) and error.finish_reason == "length")
    if isinstance(error, PromptimusError):
        return False
    failure = classify(error)
    return failure is not None and failure.retryable and failure.max_retries is None


class FallbackLLM:
    """An LLM that asks ``primary`` and, when it fails with a provider error after its own
    retries, each of ``fallbacks`` in turn (see `falls_through` for which errors move on;
    ``fallback_on`` replaces that rule with your own predicate).

    - ``reply.model_name`` names the model that answered; inside a module call the call's
      ``model`` is set to the serving provider's ``model_name``, so `track_usage` and budgets
      count (and price) that model.
    - Streaming falls back only before the first chunk: once a chunk reached the caller, an
      error propagates (output was delivered; replaying it from another model would mix two
      answers).
    - When every provider fails: `AllProvidersFailed`, listing each provider's error. When one
      fails with an error that does not fall through, that error is raised as it is, with a
      note naming the providers that failed before it.
    - ``model_name`` is the primary's. ``capabilities`` is the chain's own record: the
      structured-output mode every provider tried so far accepted, so `StructuralOutput`
      degrades to what the weakest provider needs. ``call_kwargs`` holds the request options
      every provider sets to the same value.
    """

    def __init__(
        self,
        primary: LLMProtocol,
        *fallbacks: LLMProtocol,
        fallback_on: Callable[[BaseException], bool] = falls_through,
    ) -> None:
        providers = (primary, *fallbacks)
        for provider in providers:
            if not callable(getattr(provider, "achat", None)):
                raise InvalidArgument(
                    f"FallbackLLM needs LLMs (objects with achat and astream), got "
                    f"{type(provider).__name__}."
                )
        self.providers: tuple[LLMProtocol, ...] = providers
        self.fallback_on = fallback_on
        self.capabilities = ProviderCapabilities()

    @property
    def model_name(self) -> str:
        return self.providers[0].model_name

    @property
    def model_names(self) -> tuple[str, ...]:
        """Every model that may serve a call, in the order tried (nested chains flattened):
        a cost budget needs a price for each."""
        names: list[str] = []
        for provider in self.providers:
            names.extend(getattr(provider, "model_names", None) or (provider.model_name,))
        return tuple(names)

    @property
    def call_kwargs(self) -> dict[str, Any]:
        """Request options every provider of the chain sets to the same value."""
        options = [getattr(p, "call_kwargs", None) or {} for p in self.providers]
        first, rest = options[0], options[1:]
        return {k: v for k, v in first.items() if all(k in o and o[k] == v for o in rest)}

    def cache_identity(self) -> list[Any]:
        """What identifies this chain in a response cache key: each provider's identity and
        its own request options (the key's options hold only those every provider shares,
        while one only the primary sets, e.g. ``max_tokens``, changes its replies too)."""
        from promptimus.llms.cache_key import provider_identity, request_options

        return [
            {"provider": provider_identity(provider), "options": request_options(provider, {})}
            for provider in self.providers
        ]

    def __repr__(self) -> str:
        return f"FallbackLLM({', '.join(repr(p) for p in self.providers)})"

    # --- answering ---------------------------------------------------------------------------

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        failures: list[tuple[str, BaseException]] = []
        for index, provider in enumerate(self.providers):
            self._trying(index, provider)
            try:
                reply = await provider.achat(history, **kwargs)
            except Exception as exc:
                self._failed(provider, exc, failures)
                continue
            if reply.model_name is None:
                reply.model_name = provider.model_name
            return reply
        raise self._all_failed(failures)

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        failures: list[tuple[str, BaseException]] = []
        for index, provider in enumerate(self.providers):
            self._trying(index, provider)
            stream = provider.astream(history, **kwargs)
            try:
                first = await anext(stream, None)
            except Exception as exc:
                await _close(stream)
                self._failed(provider, exc, failures)
                continue
            try:
                if first is None:
                    return  # an empty stream: the caller's accumulator says it was cut off
                if first.model_name is None:
                    first.model_name = provider.model_name
                yield first
                async for delta in stream:
                    yield delta
            finally:
                await _close(stream)
            return
        raise self._all_failed(failures)

    # --- bookkeeping -------------------------------------------------------------------------

    def _failed(
        self, provider: LLMProtocol, exc: Exception, failures: list[tuple[str, BaseException]]
    ) -> None:
        """Record a provider's failure, or re-raise it when it must not fall through."""
        if not self.fallback_on(exc):
            if failures:
                exc.add_note(f"FallbackLLM: tried before this one: {_listed(failures)}")
            raise exc
        failures.append((provider.model_name, exc))
        if len(failures) < len(self.providers):
            following = self.providers[len(failures)]
            reason = _reason(exc)
            log.warning(
                "FallbackLLM: %r failed (%s); trying %r", provider.model_name, reason, following
            )
            report_call_event(  # a span event on the call's span when traced
                "fallback",
                {"failed": provider.model_name, "next": following.model_name, "reason": reason},
            )

    def _trying(self, index: int, provider: LLMProtocol) -> None:
        """Name a fallback about to be tried as the call's model (set before it is tried, so a
        nested chain can name the model that served it in turn)."""
        if index:
            call = current_provider_call()
            if call is not None:
                call.model = provider.model_name

    def _all_failed(self, failures: list[tuple[str, BaseException]]) -> AllProvidersFailed:
        error = AllProvidersFailed(
            f"Every provider of the FallbackLLM failed: {_listed(failures)}. Check that the "
            "servers are reachable and healthy, wait and retry, or add another fallback.",
            failures,
        )
        error.__cause__ = failures[-1][1]
        return error


def _reason(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."


def _listed(failures: list[tuple[str, BaseException]]) -> str:
    listed = enumerate(failures, 1)
    return "; ".join(f"{i}. {model!r}: {_reason(exc)}" for i, (model, exc) in listed)


async def _close(stream: AsyncIterator[MessageDelta]) -> None:
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()
