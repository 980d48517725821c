"""``Anthropic``: Claude through the native Messages API, on the official ``anthropic`` SDK.

What the OpenAI-compatible endpoint drops, this keeps: thinking blocks (their text is the reply's
``reasoning``; the blocks themselves, signatures included, go back unchanged in the next request
of a tool loop), prompt caching (``cache=True``), PDFs as ``document`` blocks, and structured
outputs (``output_config.format``). The rest of promptimus talks to it as to `OpenAILike`: the
same message types, the same request options (``tools``, ``tool_choice``, ``response_format``,
``max_tokens``, ``temperature``, ``stop``...), the same retry layer (429 and 529
``overloaded_error`` retried honouring Retry-After; 400, 401, 403 never), limits, usage and
provider-call observers.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from promptimus.argument_checks import positive_int
from promptimus.dto import Message, MessageDelta
from promptimus.errors import InvalidArgument, UnknownRequestOption
from promptimus.llms.anthropic_client import AnthropicClientFactory
from promptimus.llms.anthropic_format import (
    StreamReader,
    add_cache_breakpoints,
    reply_to_message,
    to_anthropic,
    translate_options,
)
from promptimus.llms.capabilities import ProviderCapabilities
from promptimus.llms.hosted_tools import refuse_hosted_tools
from promptimus.llms.option_shapes import options_dict
from promptimus.llms.stream_checks import END, StreamChecks
from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.openai_endpoint import CHARS_PER_TOKEN
from promptimus.transport.openai_wire import response_body
from promptimus.transport.rate_limit import RateLimiter, Reservation
from promptimus.transport.retry import RetryPolicy
from promptimus.transport.secret_scrub import shown_url

if TYPE_CHECKING:
    from promptimus.llms.anthropic_batch import AnthropicBatchAPI

__all__ = ["Anthropic"]

log = logging.getLogger("promptimus.llms")

DEFAULT_MAX_TOKENS = 8192

CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27"
"""The beta a request with ``context_management`` (context editing) is sent under."""

_REQUEST_OPTIONS = frozenset(
    {
        "max_tokens",
        "messages",
        "model",
        "system",
        "tools",
        "tool_choice",
        "thinking",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "metadata",
        "output_config",
        "service_tier",
        "cache_control",
        "container",
        "inference_geo",
        "mcp_servers",
        "stream",
        "context_management",
        "extra_headers",
        "extra_query",
        "extra_body",
        "timeout",
    }
)
"""The Messages API's request fields (and the SDK's per-call transport options)."""


def _check_client_keywords(client_kwargs: dict[str, Any]) -> None:
    """A keyword meant for the SDK client that ``AsyncAnthropic`` does not take is refused
    here, not at the first request (unchecked when the SDK is not installed)."""
    if not client_kwargs:
        return
    try:
        import anthropic
    except ImportError:
        return
    accepted = inspect.signature(anthropic.AsyncAnthropic.__init__).parameters
    unknown = sorted(set(client_kwargs) - set(accepted) - {"self"})
    if unknown:
        takes = ", ".join(sorted(set(accepted) - {"self", "api_key", "base_url", "max_retries"}))
        raise UnknownRequestOption(
            f"Anthropic got keyword(s) it does not know: {', '.join(unknown)}. It passes other "
            f"keywords to the anthropic client, which takes: {takes}."
        )


def _thinking_config(thinking: Any, max_tokens: int) -> dict[str, Any] | None:
    """The ``thinking`` request field for the ``thinking=`` argument."""
    if thinking is None or thinking is False:
        return None
    if isinstance(thinking, dict):
        return dict(thinking)
    if thinking == "adaptive":
        return {"type": "adaptive"}
    budget = positive_int(thinking, "Anthropic: thinking (a budget in tokens)")
    if budget >= max_tokens:
        raise InvalidArgument(
            f"Anthropic: the thinking budget ({budget} tokens) must be below max_tokens "
            f"({max_tokens}), which counts the thinking too: raise max_tokens or lower thinking."
        )
    return {"type": "enabled", "budget_tokens": budget}


def _add_beta(params: dict[str, Any], beta: str) -> None:
    """``beta`` added to the request's ``anthropic-beta`` header (the betas it has kept)."""
    headers = dict(params.get("extra_headers") or {})
    betas = [b.strip() for b in str(headers.get("anthropic-beta") or "").split(",") if b.strip()]
    if beta not in betas:
        betas.append(beta)
    headers["anthropic-beta"] = ",".join(betas)
    params["extra_headers"] = headers


class Anthropic(StreamChecks):
    """Chat with a Claude model through Anthropic's Messages API.

    - ``api_key`` falls back to ``ANTHROPIC_API_KEY`` at first call (a missing key raises
      ``ProviderConfigError`` before any request); ``base_url`` to the SDK's default (which
      reads ``ANTHROPIC_BASE_URL``).
    - ``max_tokens``: sent with every request (the API requires it) unless the call sets it.
    - ``thinking``: a budget in tokens (extended thinking), ``"adaptive"``, or the API's own
      ``thinking`` object; None (default) leaves it off.
    - ``cache=True``: ``cache_control`` breakpoints on the stable prefix of every request
      (the tools, the system prompt, the conversation so far).
    - ``max_retries`` / ``retry``, ``max_concurrency``, ``requests_per_minute`` /
      ``tokens_per_minute``, ``call_kwargs``, ``timeout``: as on `OpenAILike`.
    """

    _request_kind = "chat"
    _thoughts_word = "thinking"
    _error_events_have_status = True
    provider_name = "anthropic"
    """The provider traces name (OpenTelemetry's `gen_ai.provider.name`)."""
    context_editing = True
    """The server clears old tool results and thinking itself (``context_management``): a
    ``Compactor(native=True)`` leaves those steps to it."""

    def _says_something(self, delta: MessageDelta) -> bool:
        """A thinking block is output too: it goes back with the next request of a tool loop."""
        return bool(delta.content or delta.reasoning or delta.tool_calls or delta.thinking)

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking: int | str | dict[str, Any] | None = None,
        cache: bool = False,
        max_concurrency: int | ConcurrencyLimit | None = None,
        max_retries: int = 4,
        timeout: float | None = 600.0,
        requests_per_minute: float | RateLimiter | None = None,
        tokens_per_minute: float | RateLimiter | None = None,
        rate_period: float = 60.0,
        call_kwargs: dict[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        **client_kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidArgument(f"Anthropic: model must be a model name, got {model!r}.")
        self.max_tokens = positive_int(max_tokens, "Anthropic: max_tokens")
        self.thinking = _thinking_config(thinking, self.max_tokens)
        if not isinstance(cache, bool):
            raise InvalidArgument(f"Anthropic: cache must be True or False, got {cache!r}.")
        self.cache = cache
        call_kwargs = options_dict(call_kwargs, "call_kwargs", "Anthropic")
        self._check_options(call_kwargs, "call_kwargs")
        _check_client_keywords(client_kwargs)
        super().__init__(
            model,
            api_key,
            base_url,
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            timeout=timeout,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            rate_period=rate_period,
            call_kwargs=call_kwargs,
            retry=retry,
            api_key_env=api_key_env,
            client_kwargs={},
        )
        self._client = AnthropicClientFactory(
            api_key,
            base_url,
            api_key_env=api_key_env,
            timeout=timeout,
            client_kwargs=client_kwargs,
        )
        self.capabilities = ProviderCapabilities()
        """What this server has shown it accepts (e.g. which structured-output mode)."""

    def secrets(self) -> tuple[str, ...]:
        """The API key this provider sends, for redaction from any text."""
        return self._client.secrets()

    def cache_identity(self) -> dict[str, Any]:
        """What identifies this provider in a response-cache key: besides the model and the
        server, the settings that change the reply (``max_tokens``, ``thinking``)."""
        cls = type(self)
        return {
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "model": self.model_name,
            "base_url": self.base_url,
            "max_tokens": self.max_tokens,
            "thinking": self.thinking,
        }

    def __repr__(self) -> str:
        return f"Anthropic(model={self.model_name!r}, base_url={shown_url(self.base_url)!r})"

    def batch_api(self) -> AnthropicBatchAPI:
        """This server's Message Batches API (`promptimus.llms.anthropic_batch`): what
        ``evaluate(..., batch=True)`` sends the requests through, at half price."""
        from promptimus.llms.anthropic_batch import AnthropicBatchAPI

        return AnthropicBatchAPI(self)

    @property
    def _context(self) -> str:
        return (
            f"{self._request_kind} request for model {self.model_name!r} at "
            f"{shown_url(self.base_url) or 'api.anthropic.com'}"
        )

    # --- request plumbing ------------------------------------------------------------------

    def _check_options(self, options: dict[str, Any], where: str) -> dict[str, Any]:
        """``options`` as Messages API fields; an unknown or wrong-shaped one is refused."""
        params = translate_options(options)
        unknown = sorted(params.keys() - _REQUEST_OPTIONS)
        if unknown:
            raise UnknownRequestOption(
                f"Anthropic: {where} has option(s) the Messages API does not take: "
                f"{', '.join(unknown)}. Pass fields a server adds to the API in "
                f"extra_body={{...}} (e.g. extra_body={{{unknown[0]!r}: ...}})."
            )
        return params

    def _params(self, history: list[Message], kwargs: dict[str, Any]) -> dict[str, Any]:
        options = {**self.call_kwargs, **kwargs}
        refuse_hosted_tools(options.get("tools"), self._context)
        params = self._check_options(options, f"the {self._context}")
        params["model"] = self.model_name
        params.setdefault("max_tokens", self.max_tokens)
        if self.thinking is not None and "thinking" not in params:
            params["thinking"] = self.thinking
        system, messages = to_anthropic(history)
        if system and "system" not in params:
            params["system"] = system
        params["messages"] = messages
        if self.cache:
            add_cache_breakpoints(params)
        if "context_management" in params:
            _add_beta(params, CONTEXT_MANAGEMENT_BETA)
        return params

    def _estimate_tokens(self, params: dict[str, Any]) -> float:
        text = json.dumps(params.get("messages", ())) + json.dumps(params.get("system", ""))
        if "tools" in params:
            text += json.dumps(params["tools"])
        return len(text) / CHARS_PER_TOKEN + int(params.get("max_tokens") or 0)

    # --- public API --------------------------------------------------------------------------

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        """The reply to ``history``. A malformed or empty reply is retried once, then raised."""
        params = self._params(history, kwargs)
        params.pop("stream", None)
        tokens = self._estimate_tokens(params) if self._tpm is not None else 0.0

        async def attempt() -> tuple[Message, Reservation | None]:
            slot, reservation = await self._admit(tokens)
            try:
                response = await self._client.connection().post(params)
            finally:
                if slot is not None:
                    slot.release()
            return reply_to_message(response_body(response)), reservation

        secrets = self._client.secrets()
        message, reservation = await self.retry.run(attempt, context=self._context, redact=secrets)
        self._record(message.usage, reservation)
        if message.model_name is None:
            message.model_name = self.model_name
        return message

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        """Stream the reply (server-sent events). A failure before the first delta with text,
        thinking or a tool call is retried like a plain request; after it, a broken connection
        raises ``StreamInterrupted``, and a stream that ends without its ``message_delta``
        (no stop reason) was cut off and raises ``StreamInterrupted`` too. A stream with no
        text and no tool call raises ``EmptyReply``."""
        params = self._params(history, kwargs)
        params["stream"] = True
        tokens = self._estimate_tokens(params) if self._tpm is not None else 0.0
        secrets = self._client.secrets()
        attempt = functools.partial(self._open_stream, params, tokens)
        events, reader, held, received, slot, reservation = await self.retry.run(
            attempt, context=self._context, redact=secrets
        )
        if held[0].model_name is None:
            held[0].model_name = self.model_name
        rest = self._rest_of_stream(
            held, lambda: anext(events, END), reader.read, received, secrets
        )
        try:
            async for delta in rest:
                yield delta
        finally:
            await rest.aclose()
            if slot is not None:
                slot.release()
            self._record(received.usage, reservation)
            await events.aclose()

    async def _open_stream(self, params: dict[str, Any], tokens: float) -> tuple[Any, ...]:
        """One attempt at a stream: send the request and read up to the first delta that says
        something (held back), under a concurrency slot the caller releases."""
        slot, reservation = await self._admit(tokens)
        try:
            connection = self._client.connection()
            response = await connection.post(params, stream=True)
            events = connection.events(response, params)
            try:
                reader = StreamReader()
                held, received = await self._read_to_output(
                    lambda: anext(events, END),
                    lambda event, _: reader.read(event),
                    lambda received: self._ended_before_output(response, received),
                )
            except BaseException:
                await events.aclose()
                raise
        except BaseException:
            if slot is not None:
                slot.release()
            raise
        return events, reader, held, received, slot, reservation
