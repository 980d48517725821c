"""``OpenAILike``: a chat provider for every OpenAI-compatible server, on the official SDK.

The SDK's client holds the connection settings and does the HTTP and timeouts; requests go out
as the JSON this class builds, without the SDK's per-call transform, and replies and stream
chunks are read as JSON (`promptimus.transport.openai_wire`; ``sdk_requests=True`` sends through
the SDK's typed methods instead). This class adds what the SDK lacks: one retry layer with
Retry-After support (the SDK's own retries are off), concurrency and RPM/TPM limits shared by
every task, cumulative usage accounting, and safe handling of the API key.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from promptimus._compat_seam import compat_calls
from promptimus.dto import Message, MessageDelta
from promptimus.errors import PromptimusError, UnknownRequestOption
from promptimus.llms.accumulator import MessageAccumulator
from promptimus.llms.capabilities import ProviderCapabilities
from promptimus.llms.hosted_tools import refuse_hosted_tools
from promptimus.llms.openai_format import (
    chunk_to_delta,
    completion_to_message,
    demands_content,
    messages_to_openai,
)
from promptimus.llms.stream_checks import END, StreamChecks
from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.openai_endpoint import CHARS_PER_TOKEN
from promptimus.transport.openai_wire import response_body, unknown_options
from promptimus.transport.rate_limit import RateLimiter, Reservation
from promptimus.transport.request_text import check_request_text
from promptimus.transport.retry import RetryPolicy
from promptimus.transport.secret_scrub import shown_url

if TYPE_CHECKING:
    from promptimus.llms.openai_batch import OpenAIBatchAPI

log = logging.getLogger("promptimus.llms")

T = TypeVar("T")


class OpenAILike(StreamChecks):
    """Chat with any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Groq, OpenRouter...).

    - ``api_key`` falls back to the ``api_key_env`` variable (``OPENAI_API_KEY``) at first call.
    - ``max_retries`` / ``retry``: transient failures (429, 5xx, 408, 409, timeouts, connection
      errors) are retried with jittered backoff, honouring ``Retry-After``.
    - ``max_concurrency``: cap on in-flight requests. ``requests_per_minute`` /
      ``tokens_per_minute``: sliding-window limits over ``rate_period`` seconds. Each accepts a
      shared ``ConcurrencyLimit`` / ``RateLimiter`` so several providers can share one quota.
    - ``call_kwargs``: default request options (``temperature``...) that per-call kwargs override.
    - ``timeout`` (seconds) bounds each whole request, however slowly a server sends, and each
      event of a stream (`ProviderTimeout`, retried like other timeouts); a call's own
      ``timeout=`` overrides it.
    - ``usage`` and ``request_count`` total every completed request.
    - ``sdk_requests=True`` sends every request through the SDK's typed method
      (``client.chat.completions.create``, its request transform and response objects
      included) instead of posting the JSON as built: for a server or proxy that needs it.
    """

    _request_kind = "chat"

    @compat_calls("provider_arguments:openai_like_arguments")
    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        max_concurrency: int | ConcurrencyLimit | None = None,
        max_retries: int = 4,
        timeout: float | None = 60.0,
        requests_per_minute: float | RateLimiter | None = None,
        tokens_per_minute: float | RateLimiter | None = None,
        rate_period: float = 60.0,
        call_kwargs: dict[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        sdk_requests: bool = False,
        **client_kwargs: Any,
    ) -> None:
        super().__init__(
            model_name,
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
            client_kwargs=client_kwargs,
        )
        self.capabilities = ProviderCapabilities()
        """What this server has shown it accepts (e.g. which structured-output mode)."""
        self.sdk_requests = sdk_requests

    def __repr__(self) -> str:
        shown = shown_url(self.base_url)
        return f"{type(self).__name__}(model_name={self.model_name!r}, base_url={shown!r})"

    def batch_api(self) -> OpenAIBatchAPI:
        """This server's Batch API (`promptimus.llms.openai_batch`): what
        ``evaluate(..., batch=True)`` sends the requests through, at half price."""
        from promptimus.llms.openai_batch import OpenAIBatchAPI

        return OpenAIBatchAPI(self)

    # --- request plumbing ------------------------------------------------------------------

    def _params(self, history: list[Message], kwargs: dict[str, Any]) -> dict[str, Any]:
        params = {"model": self.model_name, **self.call_kwargs, **kwargs}
        refuse_hosted_tools(params.get("tools"), self._context)
        unknown = unknown_options(params, type(self._factory.get().chat.completions).create)
        if unknown:
            raise UnknownRequestOption(
                f"The {self._context} got option(s) the openai SDK's chat.completions.create "
                f"does not take: {', '.join(unknown)}. Pass fields a server adds to the API in "
                f"extra_body={{...}} (e.g. extra_body={{{unknown[0]!r}: ...}})."
            )
        params["messages"] = messages_to_openai(history, self.capabilities.tool_call_content)
        return params

    async def _send(
        self, attempt: Callable[[], Awaitable[T]], params: dict[str, Any], history: list[Message]
    ) -> T:
        """Run `attempt` (which sends `params`) under the retry policy. A server that refuses an
        assistant message without `content` gets the request once more with `"content": ""`,
        and this provider sends it so from then on."""
        secrets = self._factory.secrets()
        try:
            return await self.retry.run(attempt, context=self._context, redact=secrets)
        except UnicodeEncodeError:
            # The SDK encodes the body before sending a byte; finding the field only now keeps
            # the check off every request that encodes fine.
            check_request_text(params, request=f"the {self._context}")
            raise
        except PromptimusError as exc:
            if not demands_content(exc, params["messages"]):
                raise
            self.capabilities.tool_call_content = True
            params["messages"] = messages_to_openai(history, empty_content=True)
            return await self.retry.run(attempt, context=self._context, redact=secrets)

    def _estimate_tokens(self, params: dict[str, Any]) -> float:
        chars = 0
        for message in params["messages"]:
            content = message.get("content")
            if isinstance(content, str):
                chars += len(content)
            elif content:
                chars += sum(len(part.get("text", "")) for part in content)
        if "tools" in params:
            chars += len(str(params["tools"]))
        budget = params.get("max_completion_tokens") or params.get("max_tokens") or 0
        return chars / CHARS_PER_TOKEN + budget

    # --- public API --------------------------------------------------------------------------

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        """The reply to ``history``. A malformed or empty reply (``MalformedReply`` /
        ``EmptyReply``, both ``ProviderResponseError``) is retried once, then raised."""
        params = self._params(history, kwargs)
        params.pop("stream", None)
        params.pop("stream_options", None)
        tokens = self._estimate_tokens(params) if self._tpm is not None else 0.0

        async def attempt() -> tuple[Message, Reservation | None]:
            slot, reservation = await self._admit(tokens)
            try:
                reply = await self._reply(params)
            finally:
                if slot is not None:
                    slot.release()
            return completion_to_message(reply), reservation

        message, reservation = await self._send(attempt, params, history)
        self._record(message.usage, reservation)
        if message.model_name is None:  # the server did not say: the model asked for
            message.model_name = self.model_name
        return message

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        """Stream the reply. Leading chunks that carry nothing (the role, an empty text) are held
        back until the first one with text, reasoning or a tool call, and a failure before it is
        retried like a plain request: a broken connection, an error status, a malformed chunk or
        a non-stream body (retried once), a stream that finishes with nothing in it
        (``EmptyReply``). After it, a failure is raised since output was delivered: a broken
        connection as ``StreamInterrupted``, a malformed chunk as ``MalformedReply``, and a
        stream that finishes with no text and no tool call (only reasoning) as ``EmptyReply``.
        A stream that ends without a ``finish_reason`` was cut off (the server died, closed the
        connection, or sent its error in a form the SDK skips): it raises ``StreamInterrupted``
        and never passes for a complete reply. One that ends cleanly before its first chunk is
        not retried: a server that answers a request with an empty stream (older llama.cpp on
        a context overflow) would answer it the same way again."""
        params = self._stream_params(history, kwargs)
        tokens = self._estimate_tokens(params) if self._tpm is not None else 0.0
        secrets = self._factory.secrets()
        attempt = functools.partial(self._open_stream, params, tokens)
        stream, chunks, held, received, slot, reservation = await self._send(
            attempt, params, history
        )
        if held[0].model_name is None:  # later chunks that name the model still win
            held[0].model_name = self.model_name
        try:
            for delta in held:
                yield delta
            while True:
                try:
                    chunk = await anext(chunks, END)
                    if chunk is END:
                        break
                    delta = chunk_to_delta(chunk)
                except Exception as exc:
                    error = self._stream_error(exc, received, secrets)
                    if error is None:
                        break
                    if error is exc:
                        raise
                    raise error from exc
                received.add(delta)
                yield delta
            self._check_finished(received)
        finally:
            usage = received.usage
            if slot is not None:
                slot.release()
            self._record(usage, reservation)
            await stream.close()

    async def _reply(self, params: dict[str, Any]) -> Any:
        """The reply to a chat request, as JSON; with ``sdk_requests``, the SDK's
        ``ChatCompletion`` (its request transform and response objects included)."""
        connection = self._factory.connection()
        if self.sdk_requests:
            call = connection.client.chat.completions.create(**params)
            return await connection.within(connection.limit_of(params), call)
        return response_body(await connection.post("/chat/completions", params))

    async def _start_stream(self, params: dict[str, Any]) -> Any:
        """The stream's chunks: JSON objects, or the SDK's chunk objects with ``sdk_requests``."""
        connection = self._factory.connection()
        if self.sdk_requests:  # the opening is bounded; each event, by the client's read timeout
            call = connection.client.chat.completions.create(**params)
            return await connection.within(connection.limit_of(params), call)
        response = await connection.post("/chat/completions", params, stream=True)
        return connection.event_stream(response, connection.limit_of(params))

    def _stream_params(self, history: list[Message], kwargs: dict[str, Any]) -> dict[str, Any]:
        params = self._params(history, kwargs)
        params["stream"] = True
        if params.get("stream_options", ...) is None:
            del params["stream_options"]  # for servers that reject the option
        else:
            params["stream_options"] = {"include_usage": True, **params.get("stream_options", {})}
        return params

    async def _open_stream(
        self, params: dict[str, Any], tokens: float
    ) -> tuple[Any, Any, list[MessageDelta], MessageAccumulator, Any, Any]:
        """One attempt at a stream: send the request and read up to the first chunk that says
        something (held back, with what they told), under a concurrency slot the caller
        releases once the stream is done."""
        slot, reservation = await self._admit(tokens)
        try:
            stream = await self._start_stream(params)
            try:
                chunks = stream.__aiter__()
                held, received = await self._read_to_output(
                    lambda: anext(chunks, END),
                    lambda chunk, _: chunk_to_delta(chunk),
                    lambda received: self._ended_before_output(stream, received),
                )
            except BaseException:
                await stream.close()
                raise
        except BaseException:
            if slot is not None:
                slot.release()
            raise
        return stream, chunks, held, received, slot, reservation
