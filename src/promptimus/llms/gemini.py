"""``Gemini``: Google's Gemini models through the Gemini API, on the official google-genai SDK.

The SDK's client holds the connection (its key header, base URL, API version and HTTP client);
requests go out as the JSON `promptimus.llms.gemini_format` builds, through the client's own
request method, and replies are read as JSON, without the SDK's typed request and response
objects. What the provider adds is the same as `OpenAILike`'s: one retry layer that honours
``Retry-After`` (and Google's ``RetryInfo``), concurrency and RPM/TPM limits, usage accounting,
and a key that never reaches a message, a log line or a repr.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from promptimus.dto import Message, MessageDelta
from promptimus.errors import EmptyReply, InvalidArgument, MalformedReply, ProviderConfigError
from promptimus.llms.accumulator import MessageAccumulator, stream_interrupted
from promptimus.llms.capabilities import ProviderCapabilities
from promptimus.llms.gemini_errors import from_sdk_error, malformed_error_event
from promptimus.llms.gemini_format import chunk_to_delta, request_body, response_to_message
from promptimus.llms.hosted_tools import refuse_hosted_tools
from promptimus.llms.option_shapes import options_dict
from promptimus.llms.stream_checks import END, StreamChecks
from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.deadline import EventDeadline, within
from promptimus.transport.event_stream import MAX_LINE_BYTES, SSEDecoder
from promptimus.transport.openai_endpoint import CHARS_PER_TOKEN
from promptimus.transport.openai_wire import deadline
from promptimus.transport.per_loop import PerLoop
from promptimus.transport.rate_limit import RateLimiter, Reservation
from promptimus.transport.redirect_guard import guard_redirects
from promptimus.transport.retry import RetryPolicy
from promptimus.transport.secret_scrub import shown_url, url_password

__all__ = ["GEMINI_API_KEY_ENVS", "Gemini", "ThinkingOption"]

log = logging.getLogger("promptimus.llms")

T = TypeVar("T")

GEMINI_API_KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
"""Where the key is looked up when none is passed, in this order."""

ThinkingOption = bool | int | str | dict[str, Any] | None
_LEVELS = ("minimal", "low", "medium", "high")


def thinking_config(thinking: Any) -> dict[str, Any] | None:
    """The ``thinkingConfig`` for ``thinking=``: None (the model's default), True (thoughts
    included), False (no thinking: a budget of 0), a token budget (-1: the model decides), a
    level ("minimal", "low", "medium", "high": Gemini 3), or a ``thinkingConfig`` dict."""
    if thinking is None:
        return None
    if isinstance(thinking, bool):
        return {"includeThoughts": True} if thinking else {"thinkingBudget": 0}
    if isinstance(thinking, int):
        if thinking < -1:
            raise InvalidArgument(
                f"Gemini: thinking={thinking} is not a token budget: pass a number of tokens "
                ">= 0, or -1 to let the model decide."
            )
        return {"includeThoughts": thinking != 0, "thinkingBudget": thinking}
    if isinstance(thinking, str) and thinking.lower() in _LEVELS:
        return {"includeThoughts": True, "thinkingLevel": thinking.lower()}
    if isinstance(thinking, dict):
        return dict(thinking)
    raise InvalidArgument(
        f"Gemini: thinking={thinking!r} is not a thinking setting: pass True/False, a token "
        f"budget (int, -1 for dynamic), a level ({', '.join(_LEVELS)}) or a thinkingConfig dict."
    )


class _Connection:
    """One event loop's SDK client (with its HTTP client) and the API paths of one model."""

    __slots__ = ("api", "client", "generate", "stream")

    def __init__(self, client: Any, model: str) -> None:
        self.client = client
        self.api = client._api_client  # the SDK's request method: JSON in, JSON text out
        name = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        self.generate = f"{name}:generateContent"
        self.stream = f"{name}:streamGenerateContent?alt=sse"


class Gemini(StreamChecks):
    """Chat with a Gemini model through the Gemini API (``generativelanguage.googleapis.com``).

    - ``api_key`` falls back to ``GEMINI_API_KEY``, then ``GOOGLE_API_KEY``, at first call;
      ``base_url`` (the API root: the SDK adds ``/v1beta/models/...``) to ``GEMINI_BASE_URL``,
      then to Google's API.
    - ``thinking``: see `thinking_config`; thought text becomes the reply's ``reasoning`` and
      thought signatures go back on their part in the next request of a tool loop.
    - The limits and retries are `OpenAILike`'s (``max_retries``, ``retry``,
      ``max_concurrency``, ``requests_per_minute``, ``tokens_per_minute``, ``call_kwargs``,
      ``timeout`` in seconds), as are ``usage`` and ``request_count``. ``timeout`` bounds
      each whole request, however slowly a server sends, and each event of a stream
      (`ProviderTimeout`, retried like other timeouts).
    """

    provider_name = "gcp.gemini"
    """The provider traces name (OpenTelemetry's `gen_ai.provider.name`)."""

    _request_kind = "chat"
    _thoughts_word = "thoughts"

    def __init__(
        self,
        model_name: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        thinking: ThinkingOption = None,
        max_concurrency: int | ConcurrencyLimit | None = None,
        max_retries: int = 4,
        timeout: float | None = 60.0,
        requests_per_minute: float | RateLimiter | None = None,
        tokens_per_minute: float | RateLimiter | None = None,
        rate_period: float = 60.0,
        call_kwargs: dict[str, Any] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not isinstance(model_name, str) or not model_name.strip():
            raise InvalidArgument(f"Gemini needs a model name, got {model_name!r}.")
        call_kwargs = options_dict(call_kwargs, "call_kwargs", "Gemini")
        request_body([], call_kwargs, None)  # an unknown or wrong-shaped option fails here
        if base_url is None:
            base_url = os.environ.get("GEMINI_BASE_URL") or None
        super().__init__(
            model_name,
            None,
            base_url,
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            timeout=timeout,
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            rate_period=rate_period,
            call_kwargs=call_kwargs,
            retry=retry,
            api_key_env=None,
            client_kwargs={},
        )
        self._api_key = api_key
        self.thinking = thinking_config(thinking)
        self.timeout = timeout
        self.capabilities = ProviderCapabilities()
        self._connections: PerLoop[_Connection] = PerLoop(self._connect)

    def __repr__(self) -> str:
        return f"Gemini(model_name={self.model_name!r}, base_url={shown_url(self.base_url)!r})"

    @property
    def _context(self) -> str:
        where = shown_url(self.base_url) or "generativelanguage.googleapis.com"
        return f"chat request for model {self.model_name!r} at {where}"

    # --- the key and the client ------------------------------------------------------------

    def _find_key(self) -> str | None:
        if self._api_key:
            return self._api_key
        for name in GEMINI_API_KEY_ENVS:
            if os.environ.get(name):
                return os.environ[name]
        return None

    def secrets(self) -> tuple[str, ...]:
        key = self._find_key()
        password = url_password(self.base_url)
        return tuple(secret for secret in (key, password) if secret)

    def _connect(self) -> _Connection:
        key = self._find_key()
        if not key:
            raise ProviderConfigError(
                f"No API key for Gemini model {self.model_name!r}: set GEMINI_API_KEY (or "
                "GOOGLE_API_KEY) or pass api_key=... to Gemini (a Google AI Studio key)."
            )
        try:
            import httpx
            from google import genai
            from google.genai import types
        except ImportError as exc:  # pragma: no cover - depends on the environment
            from promptimus.errors import OptionalDependencyMissing

            raise OptionalDependencyMissing(
                "Gemini needs the google-genai package: pip install 'promptimus[gemini]'."
            ) from exc
        options: dict[str, Any] = {
            # one HTTP client per event loop, used as is (no aiohttp session, no SDK retries)
            "httpx_async_client": guard_redirects(httpx.AsyncClient(timeout=self.timeout)),
        }
        if self.timeout is not None:
            options["timeout"] = int(self.timeout * 1000)
        if self.base_url is not None:
            options["base_url"] = self.base_url
        client = genai.Client(
            api_key=key, vertexai=False, http_options=types.HttpOptions(**options)
        )
        return _Connection(client, self.model_name)

    # --- requests ----------------------------------------------------------------------------

    def _body(self, history: list[Message], kwargs: dict[str, Any]) -> dict[str, Any]:
        options = {**self.call_kwargs, **kwargs}
        refuse_hosted_tools(options.get("tools"), self._context)
        if "thinking" in options:  # per call, in the constructor's terms
            options["thinking"] = thinking_config(options["thinking"])
        return request_body(history, options, self.thinking)

    def _estimate_tokens(self, body: dict[str, Any]) -> float:
        chars = sum(
            len(part.get("text") or "") for content in body["contents"] for part in content["parts"]
        )
        if "tools" in body:
            chars += len(str(body["tools"]))
        budget = body.get("generationConfig", {}).get("maxOutputTokens") or 0
        return chars / CHARS_PER_TOKEN + budget

    async def _send(self, attempt: Callable[[], Awaitable[T]]) -> T:
        return await self.retry.run(attempt, context=self._context, redact=self.secrets())

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        """The reply to ``history`` (``generateContent``). A malformed or empty reply is retried
        once, then raised (``MalformedReply`` / ``EmptyReply``)."""
        body = self._body(history, kwargs)
        tokens = self._estimate_tokens(body) if self._tpm is not None else 0.0

        async def attempt() -> tuple[Message, Reservation | None]:
            connection = self._connections.get()
            slot, reservation = await self._admit(tokens)
            try:
                text = await within(
                    deadline(self.timeout), _post(connection, connection.generate, body), _late
                )
            finally:
                if slot is not None:
                    slot.release()
            return response_to_message(json.loads(text)), reservation

        message, reservation = await self._send(attempt)
        self._record(message.usage, reservation)
        if message.model_name is None:
            message.model_name = self.model_name
        return message

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        """Stream the reply (``streamGenerateContent?alt=sse``). Failures before the first
        chunk with text, thought or a call are retried like a plain request; after it, a broken
        connection raises ``StreamInterrupted``, and so does a stream that ends without a
        ``finishReason``; one with neither text nor a call raises ``EmptyReply``."""
        body = self._body(history, kwargs)
        tokens = self._estimate_tokens(body) if self._tpm is not None else 0.0
        secrets = self.secrets()

        async def attempt() -> tuple[Any, Any, list[MessageDelta], MessageAccumulator, Any, Any]:
            return await self._open_stream(body, tokens)

        events, clock, held, received, slot, reservation = await self._send(attempt)
        try:
            for delta in held:
                if delta.model_name is None:
                    delta.model_name = self.model_name
                yield delta
            while True:
                try:
                    event = await _next_event(events, clock)
                    if event is None:
                        break
                    delta = chunk_to_delta(event, received.tool_call_count)
                except Exception as exc:
                    error = self._stream_error(exc, received, secrets)
                    if error is None:
                        break
                    raise error from exc
                received.add(delta)
                yield delta
            self._check_finished(received)
        finally:
            if slot is not None:
                slot.release()
            self._record(received.usage, reservation)
            await events.aclose()

    def _ended_before_output_event(self, received: MessageAccumulator) -> Exception:
        """The error for a stream that ended before any part with text or a call."""
        if received.complete:
            return EmptyReply(
                "the stream finished with nothing in it", finish_reason=received.finish_reason
            )
        return stream_interrupted(received, self._context)

    async def _open_stream(
        self, body: dict[str, Any], tokens: float
    ) -> tuple[Any, EventDeadline, list[MessageDelta], MessageAccumulator, Any, Any]:
        """Send the stream request and read up to the first chunk that says something; the
        opening and then each event are bounded by ``timeout``."""
        connection = self._connections.get()
        slot, reservation = await self._admit(tokens)
        events: Any = None
        limit = deadline(self.timeout)
        clock = EventDeadline(limit, _late)
        try:
            events = await within(limit, _open_events(connection, body), _late)
            held, received = await self._read_to_output(
                lambda: _next_event(events, clock, END),
                lambda event, received: chunk_to_delta(event, received.tool_call_count),
                self._ended_before_output_event,
            )
        except BaseException:
            if events is not None:
                await events.aclose()
            if slot is not None:
                slot.release()
            raise
        return events, clock, held, received, slot, reservation


def _restated(exc: Exception) -> Exception | None:
    """The `GeminiAPIError` ``exc`` stands for when it is the SDK's API error (a
    `MalformedReply` when its body is not Google's error shape), else None."""
    if type(exc).__module__ == "google.genai.errors" and hasattr(exc, "details"):
        try:
            return from_sdk_error(exc)
        except MalformedReply as malformed:
            return malformed
    return malformed_error_event(exc)


async def _post(connection: _Connection, path: str, body: dict[str, Any]) -> str:
    error: Exception | None = None
    try:
        response = await connection.api.async_request("post", path, body)
    except Exception as exc:
        error = _restated(exc)
        if error is None:
            raise
    else:
        text: str = response.body
        return text
    raise error  # outside the handler: the SDK's error (and its request) is not chained


async def _open_events(connection: _Connection, body: dict[str, Any]) -> Any:
    """Send the stream request through the SDK's client; its events, read by `_events`."""
    error: Exception | None = None
    try:
        api = connection.api
        request = api._build_request("post", connection.stream, body, None)
        response = await api._async_request(http_request=request, stream=True)
        return _events(response.response_stream)
    except Exception as exc:
        error = _restated(exc)
        if error is None:
            raise
    raise error


async def _events(response: Any) -> AsyncGenerator[Any, None]:
    """The decoded events of a ``streamGenerateContent?alt=sse`` response, read with the event
    stream decoder the other providers use (so a line longer than `MAX_LINE_BYTES`, however
    well it compresses, raises `EventLineTooLong` once it is that long, instead of being
    gathered whole); an event that carries an ``error`` raises the SDK's error for it. The
    response is closed at the end, on an error, and when the caller stops early."""
    from google.genai import errors

    decoder = SSEDecoder(MAX_LINE_BYTES)
    try:
        async for piece in response.aiter_bytes():
            for data in decoder.feed(piece):
                try:
                    event = json.loads(data)
                except ValueError:
                    raise MalformedReply("a stream event is not valid JSON") from None
                if isinstance(event, dict) and "error" in event:
                    error = event["error"]
                    code = error.get("code") if isinstance(error, dict) else None
                    if not isinstance(code, int) or isinstance(code, bool):
                        raise MalformedReply(
                            f"a stream error event's error.code is not a number: {code!r}"
                        )
                    await errors.APIError.raise_error_async(code, event, response)
                yield event
    finally:
        await response.aclose()


def _late() -> TimeoutError:
    """What a request past its deadline raises (the retry layer's timeout)."""
    return TimeoutError("no answer in full within the request's timeout")


async def _next_event(events: Any, clock: EventDeadline, end: Any = None) -> Any:
    """The stream's next event (`end` once it ended) within its deadline, its errors restated
    as Gemini's."""
    error: Exception | None = None
    try:
        event = await clock.next(events, end)
        clock.restart()
        return event
    except Exception as exc:
        error = _restated(exc)
        if error is None and type(exc).__name__ == "UnknownApiResponseError":
            error = MalformedReply("a stream event is not valid JSON")
        if error is None:
            raise
    raise error
