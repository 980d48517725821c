"""``OpenAIResponses``: OpenAI's Responses API (``POST /v1/responses``) on the official SDK.

What Chat Completions drops between the steps of a tool loop, this keeps: a reasoning model's
reasoning items go back in the next request, in place before the calls they led to, so the
model goes on from its reasoning instead of starting again (and the prompt cache still
matches). Stateless by default (``store=False``): every request asks for the items' encrypted
content (``include=["reasoning.encrypted_content"]``) and sends it back, never an id the server
did not keep. With ``store=True`` and ``conversation="previous_response_id"`` a request names
the last reply's ``response_id`` and sends only what came after it; a response the server no
longer has is answered by sending the whole conversation once.

Also: hosted tools (`promptimus.tools.HostedTool`: web search, file search, code interpreter)
whose calls come back as ``Message.hosted_calls``, ``prompt_cache_key`` /
``prompt_cache_retention``, structured output through ``text.format``. The rest of promptimus
talks to it as to `OpenAILike`: the same messages, request options in the chat-completions
shape (``tools``, ``tool_choice``, ``response_format``, ``max_tokens``...), the same retry layer
(429 retried honouring Retry-After; 400 never), limits, usage and provider-call observers.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, TypeVar

from promptimus.dto import Message, MessageDelta, MessageRole
from promptimus.errors import (
    InvalidArgument,
    PromptimusError,
    RequestRejected,
    UnknownRequestOption,
)
from promptimus.llms.capabilities import ProviderCapabilities
from promptimus.llms.openai_responses_ends import StreamReader, reply_to_message
from promptimus.llms.openai_responses_format import reasoning_ids, to_input, translate_options
from promptimus.llms.stream_checks import END, StreamChecks
from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.openai_endpoint import CHARS_PER_TOKEN
from promptimus.transport.openai_wire import response_body, unknown_options
from promptimus.transport.rate_limit import RateLimiter, Reservation
from promptimus.transport.retry import RetryPolicy

__all__ = ["OpenAIResponses"]

log = logging.getLogger("promptimus.llms")

T = TypeVar("T")

RESPONSES_PATH = "/responses"
ENCRYPTED_REASONING = "reasoning.encrypted_content"

_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
_SUMMARIES = ("auto", "concise", "detailed")
_RETENTIONS = ("in_memory", "24h")
_UNREADABLE_KEPT = 4096


def _choice(value: Any, allowed: tuple[str, ...], what: str) -> Any:
    if value is not None and (not isinstance(value, str) or value not in allowed):
        raise InvalidArgument(
            f"OpenAIResponses: {what} must be one of {', '.join(map(repr, allowed))} or None, "
            f"got {value!r}."
        )
    return value


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"OpenAIResponses: {what} must be True or False, got {value!r}.")
    return value


def _previous_response(history: list[Message]) -> int | None:
    """The index of the last assistant reply with a server id (None: there is none)."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role is MessageRole.ASSISTANT and message.response_id:
            return index
    return None


def _reasoning_refused(error: PromptimusError) -> bool:
    """Whether ``error`` is the server refusing to read encrypted reasoning it sent earlier
    (its keys changed: another organisation or project, a zero-data-retention switch)."""
    text = str(error)
    return "encrypted content" in text or "encrypted_content" in text


def _response_gone(error: PromptimusError) -> bool:
    """Whether ``error`` is the server saying it has no such previous response."""
    text = str(error)
    return "previous_response" in text or "Previous response" in text


class OpenAIResponses(StreamChecks):
    """Chat with an OpenAI model through the Responses API.

    - ``api_key`` falls back to ``OPENAI_API_KEY`` at first call (a missing key raises
      ``ProviderConfigError`` before any request); ``base_url`` to ``OPENAI_BASE_URL`` / the
      SDK's default.
    - ``reasoning_effort`` (``"none"`` ... ``"xhigh"``) and ``reasoning_summary`` (``"auto"``,
      ``"concise"``, ``"detailed"``) make the request's ``reasoning``; the summary is the
      reply's ``reasoning`` and streams as reasoning deltas.
    - ``store``: whether the server keeps the responses (default False: nothing is kept, the
      reasoning travels encrypted). ``conversation="previous_response_id"`` (needs
      ``store=True``) continues from the last reply's ``response_id`` instead of resending.
    - ``prompt_cache_key`` / ``prompt_cache_retention`` (``"in_memory"``, ``"24h"``): sent
      with every request unless the call sets them.
    - ``max_retries`` / ``retry``, ``max_concurrency``, ``requests_per_minute`` /
      ``tokens_per_minute``, ``call_kwargs``, ``timeout``: as on `OpenAILike`.
    """

    _request_kind = "responses"
    _error_events_have_status = True
    provider_name = "openai"
    """The provider traces name (OpenTelemetry's `gen_ai.provider.name`)."""
    hosted_tools = True
    """This API runs hosted tools (`promptimus.tools.HostedTool`) itself."""

    server_compaction = True
    """This API compacts a conversation on its server (``context_management`` with a
    ``compact_threshold``): ``Compactor(native=True)`` leaves its steps to it, and the
    ``compaction`` item it returns (`Message.context_edits`) goes back in place of what it
    replaced."""

    def _says_something(self, delta: MessageDelta) -> bool:
        """A reasoning item or a hosted call is output too: it goes back with the next request."""
        return bool(
            delta.content
            or delta.reasoning
            or delta.tool_calls
            or delta.thinking
            or delta.hosted_calls
        )

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        reasoning_effort: str | None = None,
        reasoning_summary: str | None = None,
        store: bool = False,
        conversation: Literal["previous_response_id"] | None = None,
        prompt_cache_key: str | None = None,
        prompt_cache_retention: str | None = None,
        max_concurrency: int | ConcurrencyLimit | None = None,
        max_retries: int = 4,
        timeout: float | None = 600.0,
        requests_per_minute: float | RateLimiter | None = None,
        tokens_per_minute: float | RateLimiter | None = None,
        rate_period: float = 60.0,
        call_kwargs: dict[str, Any] | None = None,
        retry: RetryPolicy | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        **client_kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidArgument(f"OpenAIResponses: model must be a model name, got {model!r}.")
        self.reasoning_effort = _choice(reasoning_effort, _EFFORTS, "reasoning_effort")
        self.reasoning_summary = _choice(reasoning_summary, _SUMMARIES, "reasoning_summary")
        self.store = _flag(store, "store")
        if conversation is not None and conversation != "previous_response_id":
            raise InvalidArgument(
                "OpenAIResponses: conversation must be 'previous_response_id' or None, got "
                f"{conversation!r}."
            )
        if conversation is not None and not self.store:
            raise InvalidArgument(
                "OpenAIResponses: conversation='previous_response_id' needs store=True (the "
                "server must keep a response to continue from it); drop one of them."
            )
        self.conversation = conversation
        if prompt_cache_key is not None and (
            not isinstance(prompt_cache_key, str) or not prompt_cache_key
        ):
            raise InvalidArgument(
                f"OpenAIResponses: prompt_cache_key must be a non-empty string or None, got "
                f"{prompt_cache_key!r}."
            )
        self.prompt_cache_key = prompt_cache_key
        self.prompt_cache_retention = _choice(
            prompt_cache_retention, _RETENTIONS, "prompt_cache_retention"
        )
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
            client_kwargs=client_kwargs,
        )
        self.capabilities = ProviderCapabilities()
        """What this server has shown it accepts (e.g. which structured-output mode)."""
        self._unreadable: dict[str, None] = {}
        """Ids of reasoning items whose encrypted content the server refused to read: they
        are never sent again (oldest forgotten past `_UNREADABLE_KEPT`)."""

    def __repr__(self) -> str:
        return f"OpenAIResponses(model={self.model_name!r}, base_url={self.base_url!r})"

    def cache_identity(self) -> dict[str, Any]:
        """What identifies this provider in a response-cache key: besides the model and the
        server, the settings that change the reply."""
        cls = type(self)
        return {
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "model": self.model_name,
            "base_url": self.base_url,
            "reasoning_effort": self.reasoning_effort,
            "reasoning_summary": self.reasoning_summary,
            "store": self.store,
        }

    # --- request plumbing ------------------------------------------------------------------

    def _params(
        self, history: list[Message], kwargs: dict[str, Any], *, chain: bool = True
    ) -> dict[str, Any]:
        params = {"model": self.model_name, **translate_options({**self.call_kwargs, **kwargs})}
        unknown = unknown_options(params, type(self._factory.get().responses).create)
        if unknown:
            raise UnknownRequestOption(
                f"The {self._context} got option(s) the openai SDK's responses.create does not "
                f"take: {', '.join(unknown)}. Pass fields a server adds to the API in "
                f"extra_body={{...}} (e.g. extra_body={{{unknown[0]!r}: ...}})."
            )
        params.setdefault("store", self.store)
        reasoning: dict[str, Any] = {}
        if self.reasoning_effort is not None:
            reasoning["effort"] = self.reasoning_effort
        if self.reasoning_summary is not None:
            reasoning["summary"] = self.reasoning_summary
        if reasoning and "reasoning" not in params:
            params["reasoning"] = reasoning
        include = list(params.get("include") or ())
        if ENCRYPTED_REASONING not in include:
            # the reasoning goes back in the next request as this encrypted content: the only
            # form a server that kept nothing (or no longer has the response) can read
            include.append(ENCRYPTED_REASONING)
        params["include"] = include
        if self.prompt_cache_key is not None:
            params.setdefault("prompt_cache_key", self.prompt_cache_key)
        if self.prompt_cache_retention is not None:
            params.setdefault("prompt_cache_retention", self.prompt_cache_retention)
        start = _previous_response(history) if chain and self.conversation else None
        if start is not None and "previous_response_id" not in params:
            params["previous_response_id"] = history[start].response_id
            params["input"] = to_input(
                history[start + 1 :], stored=True, unreadable=self._unreadable
            )
        else:
            params["input"] = to_input(
                history, stored=self.store and chain, unreadable=self._unreadable
            )
        return params

    async def _send(
        self,
        attempt: Callable[[dict[str, Any]], Awaitable[T]],
        params: dict[str, Any],
        history: list[Message],
        kwargs: dict[str, Any],
    ) -> T:
        """Run ``attempt(params)`` under the retry policy. A request that continued from a
        response the server no longer has is sent once more with the whole conversation."""
        secrets = self._factory.secrets()
        try:
            return await self.retry.run(
                functools.partial(attempt, params), context=self._context, redact=secrets
            )
        except PromptimusError as exc:
            again = self._once_more(exc, params, history, kwargs)
            if again is None:
                raise
            if params.get("stream"):
                again["stream"] = True
            return await self.retry.run(
                functools.partial(attempt, again), context=self._context, redact=secrets
            )

    def _once_more(
        self,
        error: PromptimusError,
        params: dict[str, Any],
        history: list[Message],
        kwargs: dict[str, Any],
    ) -> dict[str, Any] | None:
        """The request to send once more after ``error``, or None to raise it: the whole
        conversation when the previous response is gone; the conversation without the
        reasoning items the server could not read (it never gets them again)."""
        chained = "previous_response_id" in params and "previous_response_id" not in kwargs
        if chained and _response_gone(error):
            log.info(
                "%s: response %s is gone; sending the whole conversation",
                self._context,
                params["previous_response_id"],
            )
            return self._params(history, kwargs, chain=False)
        if not isinstance(error, RequestRejected) or not _reasoning_refused(error):
            return None
        refused = reasoning_ids(params.get("input") or [])
        if not refused:
            return None
        log.warning(
            "%s: the server cannot read %d earlier reasoning item(s) (its keys changed); "
            "sending the conversation without them",
            self._context,
            len(refused),
        )
        for item_id in refused:
            self._unreadable[item_id] = None
        while len(self._unreadable) > _UNREADABLE_KEPT:
            del self._unreadable[next(iter(self._unreadable))]
        return self._params(history, kwargs, chain=False)

    def _estimate_tokens(self, params: dict[str, Any]) -> float:
        text = json.dumps(params.get("input", ()), ensure_ascii=False, default=str)
        if "tools" in params:
            text += json.dumps(params["tools"], default=str)
        return len(text) / CHARS_PER_TOKEN + int(params.get("max_output_tokens") or 0)

    # --- public API --------------------------------------------------------------------------

    async def achat(self, history: list[Message], **kwargs: Any) -> Message:
        """The reply to ``history``. A malformed or empty reply is retried once, then raised;
        a reply cut at ``max_output_tokens`` is `OutputTruncated`, one the content filter
        stopped `ContentFiltered`, a failed one the error its code stands for."""
        params = self._params(history, kwargs)
        params.pop("stream", None)
        tokens = self._estimate_tokens(params) if self._tpm is not None else 0.0

        async def attempt(params: dict[str, Any]) -> tuple[Message, Reservation | None]:
            slot, reservation = await self._admit(tokens)
            try:
                connection = self._factory.connection()
                response = await connection.post(RESPONSES_PATH, params)
            finally:
                if slot is not None:
                    slot.release()
            return reply_to_message(response_body(response), self._context), reservation

        message, reservation = await self._send(attempt, params, history, kwargs)
        self._record(message.usage, reservation)
        if message.model_name is None:
            message.model_name = self.model_name
        return message

    async def astream(self, history: list[Message], **kwargs: Any) -> AsyncIterator[MessageDelta]:
        """Stream the reply (server-sent events). A failure before the first delta with text,
        reasoning, a reasoning item or a call is retried like a plain request; after it, a
        broken connection raises ``StreamInterrupted``, and so does a stream that ends before
        ``response.completed``. A ``response.failed`` or ``error`` event is the error its code
        stands for, quoting the server."""
        params = self._params(history, kwargs)
        params["stream"] = True
        tokens = self._estimate_tokens(params) if self._tpm is not None else 0.0
        secrets = self._factory.secrets()
        attempt = functools.partial(self._open_stream, tokens=tokens)
        stream, events, reader, held, received, slot, reservation = await self._send(
            attempt, params, history, kwargs
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
            await stream.close()

    async def _open_stream(self, params: dict[str, Any], *, tokens: float) -> tuple[Any, ...]:
        """One attempt at a stream: send the request and read up to the first delta that says
        something (held back), under a concurrency slot the caller releases."""
        slot, reservation = await self._admit(tokens)
        try:
            connection = self._factory.connection()
            response = await connection.post(RESPONSES_PATH, params, stream=True)
            stream = connection.event_stream(response, connection.limit_of(params))
            try:
                events = stream.__aiter__()
                reader = StreamReader(self._context)
                held, received = await self._read_to_output(
                    lambda: anext(events, END),
                    lambda event, _: reader.read(event),
                    lambda received: self._ended_before_output(response, received),
                )
            except BaseException:
                await stream.close()
                raise
        except BaseException:
            if slot is not None:
                slot.release()
            raise
        return stream, events, reader, held, received, slot, reservation
