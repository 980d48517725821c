"""`StreamChecks`: how a provider judges a stream that ended or broke, one rule for every API.

A stream is an answer only once the model finished it (a `finish_reason`) with text or a tool
call in it; one that broke after the model finished lost only trailing events (usage) and
stands; one that broke before is `StreamInterrupted` saying what had arrived, or the error the
retry layer makes of the failure. Each provider names what a reply without text or calls held
(`_thoughts_word`: reasoning, thinking, thoughts).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from ..dto import MessageDelta
from ..errors import EmptyReply, MalformedReply
from ..transport.openai_endpoint import OpenAIEndpoint
from ..transport.retry import chained, classify
from ..transport.secret_scrub import redact_secrets
from .accumulator import MessageAccumulator, stream_interrupted

__all__ = ["END", "StreamChecks"]

END: Any = object()
"""What a stream's next event is once it has ended (an event itself may be JSON ``null``)."""

log = logging.getLogger("promptimus.llms")


class StreamChecks(OpenAIEndpoint):
    """The base of the providers that stream (`OpenAILike`, `OpenAIResponses`, `Anthropic`,
    `Gemini`): reading a stream up to its first output (`_read_to_output`) and on to its end
    (`_rest_of_stream`), `_stream_error` and `_check_finished` (see the module docstring)."""

    _thoughts_word = "reasoning"
    _error_events_have_status = False
    """Whether the API sends errors inside a stream with a status (Anthropic's error events):
    such a failure is the server's answer, not a broken connection."""

    async def _read_to_output(
        self,
        next_event: Callable[[], Awaitable[Any]],
        to_delta: Callable[[Any, MessageAccumulator], MessageDelta | None],
        ended: Callable[[MessageAccumulator], Exception],
    ) -> tuple[list[MessageDelta], MessageAccumulator]:
        """Read a stream up to its first delta that says something (`_says_something`): the
        deltas read, held back so that a stream failing before them can be tried again, and
        what they told. `next_event()` answers `END` once the stream ended, `to_delta(event,
        received)` makes an event's delta (None: nothing in it), and `ended(received)` is the
        error for a stream that ended before saying anything."""
        held: list[MessageDelta] = []
        received = MessageAccumulator()
        while not held or not self._says_something(held[-1]):
            event = await next_event()
            if event is END:
                raise ended(received)
            delta = to_delta(event, received)
            if delta is not None:
                held.append(delta)
                received.add(delta)
        return held, received

    async def _rest_of_stream(
        self,
        held: list[MessageDelta],
        next_event: Callable[[], Awaitable[Any]],
        to_delta: Callable[[Any], MessageDelta | None],
        received: MessageAccumulator,
        secrets: tuple[str, ...],
    ) -> AsyncGenerator[MessageDelta, None]:
        """The deltas `_read_to_output` held, then the rest of the stream's, until
        `next_event()` answers `END`, each added to `received`. A failure while reading is the
        error `_stream_error` makes of it (none: the model had finished); the end is judged by
        `_check_finished`."""
        for first in held:
            yield first
        while True:
            try:
                event = await next_event()
                if event is END:
                    break
                delta = to_delta(event)
            except Exception as exc:
                error = self._stream_error(exc, received, secrets)
                if error is None:
                    break
                if error is exc:
                    raise
                raise error from exc
            if delta is not None:
                received.add(delta)
                yield delta
        self._check_finished(received)

    def _says_something(self, delta: MessageDelta) -> bool:
        """Whether a delta is output the caller sees: text, reasoning or a tool call."""
        return bool(delta.content or delta.reasoning or delta.tool_calls)

    def _stream_error(
        self, exc: Exception, received: MessageAccumulator, secrets: tuple[str, ...]
    ) -> BaseException | None:
        """What to raise for ``exc``, raised by a stream that already delivered output (``exc``
        itself when it is not a provider failure), or None when the model had finished and only
        trailing events (usage) were lost."""
        failure = classify(exc)
        if failure is None:
            return exc
        if received.complete and failure.retryable:
            reason = redact_secrets(failure.reason, secrets)
            log.debug("%s: stream broke after finishing (%s)", self._context, reason)
            return None
        error = self.retry.translate(
            exc, failure, context=f"{self._context} (stream interrupted)", redact=secrets
        )
        broken = not (self._error_events_have_status and failure.status is not None)
        if failure.retryable and failure.max_retries is None and broken:
            # the connection broke: say what had arrived
            error = stream_interrupted(
                received, self._context, cause=redact_secrets(failure.reason, secrets)
            )
        return chained(error, exc, secrets)

    def _check_finished(self, received: MessageAccumulator) -> None:
        """A stream that ended without a finish_reason was cut off; one with neither text nor a
        tool call (only the model's thoughts) is empty."""
        if received.finish_reason is None:
            raise stream_interrupted(received, self._context)
        if not received.content.strip() and not received.tool_call_count:
            raise EmptyReply(
                f"no text and no tool call, only {self._thoughts_word}",
                source=self._context,
                finish_reason=received.finish_reason,
            )

    def _ended_before_output(self, answer: Any, received: MessageAccumulator) -> Exception:
        """The error for a stream that ended before any event with text or a tool call:
        `answer` is the HTTP response (or the SDK's stream, which holds it), whose content type
        tells a proxy's error page from a stream that was cut."""
        if received.complete:
            return EmptyReply(
                "the stream finished with nothing in it", finish_reason=received.finish_reason
            )
        if not received.chunks:
            headers = getattr(answer, "headers", None)
            if headers is None:
                headers = getattr(getattr(answer, "response", None), "headers", None)
            kind = str((headers or {}).get("content-type", "")).split(";", 1)[0].strip()
            if kind and kind != "text/event-stream":
                return MalformedReply(
                    f"the stream request was answered with a {kind} body instead of an event "
                    "stream (a proxy's error page, or a server that does not stream)"
                )
        return stream_interrupted(received, self._context)
