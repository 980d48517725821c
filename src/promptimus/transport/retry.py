"""One retry layer for every HTTP provider: classify a failure, back off, retry, give up clearly.

The SDK clients are created with their own retries switched off, so this is the only place a request
is repeated. Classification is duck-typed (``status_code`` + ``response.headers`` on the exception,
connection/timeout error classes) so the same policy serves chat, embeddings and any other SDK call.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from promptimus.argument_checks import finite_number, non_negative_int
from promptimus.errors import (
    ContextWindowExceeded,
    EmptyReply,
    MalformedReply,
    ProviderResponseError,
    ProviderTimeout,
    ProviderUnavailable,
    RequestRejected,
    RetryBudgetExhausted,
)
from promptimus.observe.provider_calls import report_call_event
from promptimus.transport import json_reply
from promptimus.transport.error_body import (
    context_overflow,
    is_request_error_body,
    rejected_fields,
)
from promptimus.transport.redirect_guard import refused_redirect
from promptimus.transport.secret_scrub import redact_secrets, scrub_exception

T = TypeVar("T")

log = logging.getLogger("promptimus.transport")

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Besides every 5xx: request timeout, lock conflict, rate limit (as the openai SDK does).
A 5xx whose body is a request-validation error (some servers answer a bad request with 500:
llama-cpp-python wraps FastAPI's validation report in a 500 ``internal_server_error``) or a
context-window error is not retried: the same request would fail the same way."""

_TRANSPORT_ERROR_NAMES = frozenset(
    {"TransportError", "TimeoutException", "NetworkError", "RemoteProtocolError", "ProtocolError"}
)


@dataclass(frozen=True, slots=True)
class Failure:
    """What went wrong with one attempt, as far as retrying is concerned."""

    retryable: bool
    reason: str
    """Short human description, e.g. ``HTTP 429: Rate limit reached`` or ``connection error``."""
    status: int | None = None
    retry_after: float | None = None
    """Seconds the server asked us to wait (``retry-after-ms`` / ``Retry-After``), if it said."""
    server_message: str = ""
    """What the server said (the error body's message), for errors that carry one."""
    body: Any = None
    """The decoded error body, for errors that carry one."""
    max_retries: int | None = None
    """At most this many retries for failures of this kind in one call, whatever the budget
    (a malformed reply is retried once: a glitch may pass, a wrong endpoint will not)."""
    timeout: bool = False
    """The request timed out (no answer, or not all of it, within its timeout)."""


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait according to ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP-date)."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) / divisor
        except ValueError:
            continue
        if math.isfinite(value):
            return max(value, 0.0)
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        parsed = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    return max(parsed.timestamp() - time.time(), 0.0)


def _error_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if isinstance(message, str):
            return message
        if isinstance(inner, str):
            return inner
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) and message else str(exc) or type(exc).__name__


def _is_transport_error(exc: BaseException) -> bool:
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    for name in _SDKS:
        sdk = sys.modules.get(name)
        if sdk is not None and isinstance(exc, sdk.APIConnectionError):
            return True
    return any(
        cls.__name__ in _TRANSPORT_ERROR_NAMES and cls.__module__.startswith("httpx")
        for cls in type(exc).__mro__
    )


_SDKS = {"openai": "OpenAIError", "anthropic": "AnthropicError"}
"""The provider SDKs whose errors are classified, and the base class of each one's errors."""

MALFORMED_RETRIES = 1
"""How many times a malformed reply is retried within one call."""


def _malformed(exc: BaseException) -> MalformedReply | None:
    """The `MalformedReply` that ``exc`` is or stands for (a body that is not JSON, or JSON that
    cannot be read), or None."""
    if isinstance(exc, MalformedReply):
        return exc
    if json_reply.undecodable(exc):
        return json_reply.unreadable(exc)
    openai = sys.modules.get("openai")
    if openai is not None and isinstance(exc, openai.APIResponseValidationError):
        return MalformedReply(f"the body does not fit the API's schema ({exc.message})")
    return None


def classify(exc: BaseException) -> Failure | None:
    """Describe a provider failure, or return ``None`` if `exc` is not a transport/API failure
    (a bug, a cancellation) and must propagate untouched."""
    malformed = _malformed(exc)
    if malformed is not None:
        # an empty reply cut at the token limit would be cut the same way again
        retryable = not (isinstance(malformed, EmptyReply) and malformed.finish_reason == "length")
        reason = f"malformed reply: {malformed.problem}"
        return Failure(retryable, reason, max_retries=MALFORMED_RETRIES)
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    body = getattr(exc, "body", None)
    if isinstance(status, int) and response is not None:
        headers = getattr(response, "headers", None)
        message = _error_message(exc)
        reason = f"HTTP {status}: {message}"
        should = headers.get("x-should-retry") if headers is not None else None
        if context_overflow(body, message) is not None:
            retryable = False
        elif should in ("true", "false"):
            retryable = should == "true"
        elif status >= 500 and is_request_error_body(body, message):
            retryable = False
        else:
            retryable = status in RETRYABLE_STATUSES or status >= 500
        return Failure(retryable, reason, status, parse_retry_after(headers), message, body)
    if _is_transport_error(exc):
        timeout = isinstance(exc, TimeoutError) or "timeout" in type(exc).__name__.lower()
        kind = "timeout" if timeout else "connection error"
        return Failure(True, f"{kind} ({type(exc).__name__}: {exc})", timeout=timeout)
    for name, base in _SDKS.items():
        sdk = sys.modules.get(name)
        if sdk is not None and isinstance(exc, getattr(sdk, base)):
            message = _error_message(exc)  # e.g. an error event inside a stream (no HTTP status)
            return Failure(False, f"{type(exc).__name__}: {message}", None, None, message, body)
    return None


def _hint(failure: Failure) -> str:
    if failure.status in (401, 403):
        return "Check the API key (and that it is allowed to use this model)."
    if failure.status == 404:
        return "Check the model name and that base_url points at the API root (often .../v1)."
    return "Retrying will not help: fix the request (messages, tools, options) or the model name."


@dataclass(slots=True)
class RetryPolicy:
    """Retry transient failures with full-jitter exponential backoff, honouring ``Retry-After``.

    ``max_retries`` counts repeats, so a call makes at most ``max_retries + 1`` attempts.
    A server-requested wait is used as-is, bounded by ``max_retry_after``. ``sleep`` performs
    each wait (tests pass a recorder to check the waits without spending them).
    """

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0
    sleep: Callable[[float], Awaitable[object]] = field(
        default=asyncio.sleep, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # checked where given: a NaN or a string would make every comparison below quietly false
        self.max_retries = non_negative_int(self.max_retries, "max_retries (0 disables retries)")
        self.base_delay = finite_number(self.base_delay, "base_delay (seconds)")
        self.max_delay = finite_number(self.max_delay, "max_delay (seconds)")
        self.max_retry_after = finite_number(self.max_retry_after, "max_retry_after (seconds)")

    classify = staticmethod(classify)

    def backoff(self, retry_index: int) -> float:
        """Full jitter: uniform in ``[0, min(max_delay, base_delay * 2**retry_index)]``."""
        ceiling = min(self.max_delay, self.base_delay * (2.0 ** min(retry_index, 60)))
        return random.uniform(0.0, ceiling)

    def delay_for(self, failure: Failure, retry_index: int) -> float:
        if failure.retry_after is not None:
            return min(failure.retry_after, self.max_retry_after)
        return self.backoff(retry_index)

    def translate(
        self, exc: BaseException, failure: Failure, *, context: str, redact: Iterable[str] = ()
    ) -> Exception:
        """The promptimus error to raise for a failure that will not be retried (any more)."""
        malformed = _malformed(exc)
        if malformed is not None:
            return malformed.located(context, redact_secrets(malformed.problem, redact))
        reason = redact_secrets(failure.reason, redact)
        if failure.timeout:
            return ProviderTimeout(
                f"{context} timed out ({reason}): timeout=... bounds each whole request (a "
                "stream: each event), however slowly the server sends. Raise it for a slow "
                "server or a long answer; check that the server is healthy."
            )
        if failure.retryable:
            return ProviderUnavailable(
                f"{context} failed: {reason}. Check that the server is reachable and healthy."
            )
        said = redact_secrets(failure.server_message, redact)
        overflow = context_overflow(failure.body, failure.server_message)
        if overflow is not None:
            numbers = ""
            if overflow.prompt_tokens is not None and overflow.context_window is not None:
                numbers = (
                    f" ({overflow.prompt_tokens} tokens requested, the context window holds "
                    f"{overflow.context_window})"
                )
            elif overflow.context_window is not None:
                numbers = f" (the context window holds {overflow.context_window} tokens)"
            return ContextWindowExceeded(
                f"{context} is larger than the model's context window{numbers}; the server said: "
                f"{said!r}. Shorten the conversation (a smaller memory_size, fewer or shorter "
                "tool results or retrieved documents), lower max_tokens, or serve the model with "
                "a larger context (llama.cpp: --ctx-size; vLLM: --max-model-len; Ollama: "
                "num_ctx). Retrying the same request would fail again.",
                status=failure.status,
                server_message=said,
                context_window=overflow.context_window,
                prompt_tokens=overflow.prompt_tokens,
            )
        said_invalid = is_request_error_body(failure.body, failure.server_message)
        if failure.status is not None or said_invalid:
            return RequestRejected(
                f"{context} was rejected: {reason}. {_hint(failure)}",
                status=failure.status,
                server_message=said,
                rejected_fields=rejected_fields(failure.body, failure.server_message),
            )
        return ProviderResponseError(f"{context} was rejected: {reason}. {_hint(failure)}")

    async def run(
        self,
        fn: Callable[[], Awaitable[T]],
        *,
        context: str = "request",
        redact: Iterable[str] = (),
    ) -> T:
        """Await ``fn()`` until it succeeds, retrying transient failures within the budget.

        The error raised chains the last failure as ``__cause__``, with ``redact`` (the API key)
        scrubbed from the whole chain: messages, bodies, responses and requests."""
        redact = tuple(redact)
        attempts = self.max_retries + 1
        capped_retries = 0  # retries made so far for failures with their own cap
        for attempt in range(1, attempts + 1):
            try:
                return await fn()
            except Exception as exc:
                refused = refused_redirect(exc)
                if refused is not None and refused is not exc:
                    raise refused from None  # what the SDK wrapped it in says less
                failure = self.classify(exc)
                if failure is None:
                    raise
                capped = failure.max_retries is not None
                if (
                    not failure.retryable
                    or (capped and capped_retries >= (failure.max_retries or 0))
                    or (capped and attempt == attempts)  # its own error says more
                ):
                    error = self.translate(exc, failure, context=context, redact=redact)
                    raise chained(error, exc, redact) from exc
                if attempt == attempts:
                    exhausted = _exhausted(failure, attempts, context, redact)
                    raise chained(exhausted, exc, redact) from exc
                capped_retries += capped
                delay = self.delay_for(failure, attempt - 1)
                log.debug(
                    "%s: attempt %d/%d failed (%s); retrying in %.2fs",
                    context,
                    attempt,
                    attempts,
                    redact_secrets(failure.reason, redact),
                    delay,
                )
                report_call_event(  # a span event on the request's span when traced
                    "retry",
                    {"attempt": attempt, "reason": redact_secrets(failure.reason, redact)},
                )
                await self.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


def _exhausted(
    failure: Failure, attempts: int, context: str, redact: Iterable[str]
) -> RetryBudgetExhausted:
    """The error for a retryable failure on the last attempt the budget allows."""
    reason = redact_secrets(failure.reason, redact)
    tried = f"{attempts} attempt{'s' * (attempts > 1)}"
    if failure.timeout:
        return ProviderTimeout(
            f"{context} timed out ({tried}; last error: {reason}): timeout=... bounds each whole "
            "request (a stream: each event), however slowly the server sends. Raise it for a "
            "slow server or a long answer, or check that the server is healthy."
        )
    return RetryBudgetExhausted(
        f"{context} failed after {tried}; last error: {reason}. The server is overloaded or "
        "unreachable: try again later, lower the request rate, or raise max_retries."
    )


def chained(error: BaseException, cause: BaseException, secrets: Iterable[str]) -> BaseException:
    """``error`` with ``cause`` as its ``__cause__``, the secrets scrubbed from the whole chain
    (raise it ``from cause``: the chain is the same, and nothing in it holds the key)."""
    error.__cause__ = cause
    return scrub_exception(error, secrets)
