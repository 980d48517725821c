"""Provider calls: the requests modules make to their LLM, embedder and reranker, and the
observers (tracing, usage accounting, budgets) that watch them.

Providers are not modules, so the module call path does not see them. The module that makes a
request wraps it instead:

    async with provider_call("llm", self, llm, messages, params) as call:
        reply = await llm.achat(messages, **params)
        call.output = reply

Every registered observer's `on_start(call)` runs before the request is sent, then each
observer's optional `before_send(call)`, which may raise to refuse the call (a budget does; the
request is then not sent and every started observer sees the error), then each observer's
optional `async answer(call)`, which may answer the call itself by setting `call.output` (batch
evaluation does: the request goes out in a batch instead; the caller then sends nothing, as
when a replay cassette answered it in `before_send`), and `on_end(call)` after it
finished or failed (`call.error`). A
provider that learns the exact usage of its requests (`OpenAIEndpoint`) reports it with
`report_usage`, which adds it to the call in progress in this context; otherwise the reply's
`usage` is used. With no observer registered the scope costs a few attribute lookups.

Modules may also report events that are not requests (a structured-output retry) with
`report_event`; observers with an `on_event(module, name, attributes)` method receive them.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..core.hooks import RemovableHandle
from ..dto import Usage

if TYPE_CHECKING:
    from ..core.module import Module

__all__ = [
    "ProviderCall",
    "ProviderCallObserver",
    "current_provider_call",
    "provider_call",
    "register_provider_call_observer",
    "report_call_event",
    "report_event",
    "report_usage",
]

_log = logging.getLogger(__name__)
_observers: dict[int, ProviderCallObserver] = {}
_current: contextvars.ContextVar[ProviderCall | None] = contextvars.ContextVar(
    "promptimus_provider_call", default=None
)


class ProviderCallObserver(Protocol):
    """Watches provider calls. An optional `before_send(call)` may raise to refuse a call."""

    def on_start(self, call: ProviderCall) -> None: ...

    def on_end(self, call: ProviderCall) -> None: ...


class ProviderCall:
    """One request (or one batch of requests) a module makes to a provider.

    - `kind`: "llm", "embedding" or "rerank".
    - `module`: the module that made it (its path names the caller in spans and usage).
    - `provider`, `model`: the provider object and its `model_name` (None if it has none). A
      wrapper that served the call with another provider (`FallbackLLM`) sets `model` to that
      provider's `model_name`, so usage and cost are counted for the model that answered.
    - `inputs`: the messages sent (llm), the texts (embedding), or `(query, hits)` (rerank).
    - `params`: the request options (`provider_kwargs`); the provider's own defaults are in
      `getattr(provider, "call_kwargs", {})`.
    - `template`, `variables`: the prompt template and its values, when a `Prompt` rendered it.
    - `output`, `error`: what came back, or what was raised.
    - `usage`, `requests`: token usage and the number of HTTP requests, when known.
    - `state`: scratch space for observers, keyed by whatever they like.
    """

    __slots__ = (
        "_reported",
        "error",
        "inputs",
        "kind",
        "model",
        "module",
        "output",
        "params",
        "provider",
        "requests",
        "state",
        "stream",
        "template",
        "variables",
    )

    def __init__(
        self,
        kind: str,
        module: Module | None,
        provider: Any,
        inputs: Any,
        params: Mapping[str, Any] | None = None,
        *,
        template: str | None = None,
        variables: Mapping[str, Any] | None = None,
        stream: bool = False,
    ) -> None:
        self.kind = kind
        self.module = module
        self.provider = provider
        self.model: str | None = getattr(provider, "model_name", None)
        self.inputs = inputs
        self.params: Mapping[str, Any] = params or {}
        self.template = template
        self.variables = variables
        self.stream = stream
        self.output: Any = None
        self.error: BaseException | None = None
        self.requests = 0
        self._reported: Usage | None = None
        self.state: dict[Any, Any] = {}

    @property
    def usage(self) -> Usage | None:
        """What the provider reported for this call, else the reply's own `usage`."""
        if self._reported is not None:
            return self._reported
        return getattr(self.output, "usage", None) if self.kind == "llm" else None

    @property
    def request_count(self) -> int:
        """HTTP requests the provider reported (1 when it reported none but the call ended,
        0 when the reply came from a response cache)."""
        if self.requests or self.error is not None:
            return self.requests
        usage = self.usage
        return 0 if usage is not None and usage.cache_hit else 1

    def __repr__(self) -> str:
        return f"ProviderCall({self.kind!r}, model={self.model!r})"


def register_provider_call_observer(observer: ProviderCallObserver) -> RemovableHandle:
    """Watch every provider call in the process; `.remove()` the handle to stop."""
    return RemovableHandle(_observers, observer)


def current_provider_call() -> ProviderCall | None:
    return _current.get()


def report_usage(usage: Usage | None) -> None:
    """Called by a provider after each completed HTTP request: adds to the call in progress."""
    call = _current.get()
    if call is None:
        return
    call.requests += 1
    if usage is not None:
        call._reported = usage if call._reported is None else call._reported + usage


def report_call_event(name: str, attributes: Mapping[str, Any]) -> None:
    """Called by a provider inside a call (e.g. before retrying a failed request): observers
    with an `on_call_event(call, name, attributes)` method receive it."""
    call = _current.get()
    if call is None:
        return
    for observer in list(_observers.values()):
        on_call_event = getattr(observer, "on_call_event", None)
        if on_call_event is not None:
            try:
                on_call_event(call, name, attributes)
            except Exception:  # an observer's bug must not fail the user's call
                _log.exception("provider call observer %r failed in on_call_event", observer)


def report_event(module: Module, name: str, attributes: Mapping[str, Any]) -> None:
    """Tell observers about something that happened inside `module`'s call (e.g. a retry)."""
    for observer in list(_observers.values()):
        on_event = getattr(observer, "on_event", None)
        if on_event is not None:
            try:
                on_event(module, name, attributes)
            except Exception:  # an observer's bug must not fail the user's call
                _log.exception("provider call observer %r failed in on_event", observer)


class _Scope:
    __slots__ = ("call", "observers", "token")

    def __init__(self, call: ProviderCall) -> None:
        self.call = call
        self.observers: list[ProviderCallObserver] = []
        self.token: contextvars.Token[ProviderCall | None] | None = None

    async def __aenter__(self) -> ProviderCall:
        if _observers:
            try:
                for observer in list(_observers.values()):
                    observer.on_start(self.call)
                    self.observers.append(observer)
                # checks run once every observer has started, so a refused call is still seen
                for observer in self.observers:
                    before_send = getattr(observer, "before_send", None)
                    if before_send is not None:
                        before_send(self.call)
                for observer in self.observers:
                    answer = getattr(observer, "answer", None)
                    if answer is not None and self.call.output is None:
                        await answer(self.call)
            except BaseException as exc:
                self.call.error = exc
                self._end()
                raise
            self.token = _current.set(self.call)
        return self.call

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if self.token is not None:
            _current.reset(self.token)
        if self.observers:
            if exc is not None:
                self.call.error = exc
            self._end()

    def _end(self) -> None:
        for observer in reversed(self.observers):
            try:
                observer.on_end(self.call)
            except Exception:  # an observer's bug must not fail the user's call
                _log.exception("provider call observer %r failed in on_end", observer)


def provider_call(
    kind: str,
    module: Module | None,
    provider: Any,
    inputs: Any,
    params: Mapping[str, Any] | None = None,
    *,
    template: str | None = None,
    variables: Mapping[str, Any] | None = None,
    stream: bool = False,
) -> _Scope:
    """`async with provider_call(...) as call:` around one request; set `call.output` inside."""
    return _Scope(
        ProviderCall(
            kind,
            module,
            provider,
            inputs,
            params,
            template=template,
            variables=variables,
            stream=stream,
        )
    )
