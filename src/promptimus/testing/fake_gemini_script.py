"""What a test scripts into `FakeGeminiServer`: replies, function calls and faults."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["GeminiCall", "GeminiFault", "GeminiReply"]


@dataclass(slots=True)
class GeminiCall:
    """A function call the fake model makes. ``signature=True`` gives it a fresh thought
    signature (as Gemini 3 does on every call of a step), a string gives that one, None none.
    ``id`` is sent when given (Gemini 2 sends none)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    signature: str | bool | None = True


@dataclass(slots=True)
class GeminiReply:
    """One ``generateContent`` answer. A plain ``str`` script item is ``GeminiReply(text=...)``.

    ``thought`` is sent as a thought part (when the request asked for thoughts or always with
    ``always_thoughts``), with ``thought_signature`` on it; ``signature`` goes on the answer's
    text part. ``usage`` overrides fields of the computed ``usageMetadata`` (one token per word).
    ``finish_reason`` defaults to ``STOP``; ``model`` is the ``modelVersion``; ``chunks`` is how
    many events a stream splits the text into."""

    text: str | None = None
    calls: list[GeminiCall] | None = None
    thought: str | None = None
    thought_signature: str | None = None
    signature: str | None = None
    usage: dict[str, int] | None = None
    finish_reason: str = "STOP"
    model: str | None = None
    chunks: int = 2
    always_thoughts: bool = False


GeminiFaultKind = Literal[
    "status", "cut", "drop", "stream_error", "malformed", "raw", "drip", "long_line"
]

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


@dataclass(frozen=True, slots=True)
class GeminiFault:
    """A failure to inject, scripted like any reply:

    - ``GeminiFault.status(429, retry_after=2, retry_delay=None)``: an error status with a
      Google error body (``{"error": {"code", "message", "status"}}``); ``retry_after`` sets the
      ``Retry-After`` header, ``retry_delay`` a ``google.rpc.RetryInfo`` detail.
    - ``GeminiFault.context_overflow(limit, tokens)``: the 400 Gemini sends for an input larger
      than the model's limit.
    - ``GeminiFault.echo_key(status)``: an error whose message quotes the API key sent.
    - ``GeminiFault.cut(after_chunks=1, clean=True)``: a stream that stops after that many
      events without its ``finishReason`` (``clean=False`` breaks the connection instead); a
      plain request gets half a body.
    - ``GeminiFault.redirect(location, code=307)``: a redirect to ``location`` (a whole URL).
    - ``GeminiFault.drop()``: the connection closes without an answer.
    - ``GeminiFault.stream_error(code, after_chunks=1)``: a stream sends that many events, then
      a Google error body as an event, and ends (a plain request gets the error status).
    - ``GeminiFault.malformed(after_chunks=0)``: a ``200 OK`` whose body (or whose event after
      that many good ones) is not JSON, as a broken proxy sends.
    - ``GeminiFault.raw(body, status=200)``: exactly these bytes as the body (a stream request
      gets them as its event stream when the status is 200).
    - ``GeminiFault.drip(every=0.5)``: the reply (or the whole stream) sent one byte every
      ``every`` seconds for as long as the client reads: a server that holds a call open.
    - ``GeminiFault.long_line(size)``: a stream whose body is one ``data:`` line of ``size``
      bytes with no line end, sent gzip-compressed (a few hundred KB on the wire for 200 MB).
    """

    kind: GeminiFaultKind
    status_code: int = 500
    body: Any = None
    headers: dict[str, str] | None = None
    after_chunks: int = 1
    clean: bool = True
    quotes_key: bool = False
    seconds: float = 0.0

    @classmethod
    def status(
        cls,
        code: int,
        message: str | None = None,
        *,
        status: str | None = None,
        retry_after: float | None = None,
        retry_delay: float | None = None,
        details: list[dict[str, Any]] | None = None,
    ) -> GeminiFault:
        name = status or _STATUS_NAMES.get(code, "UNKNOWN")
        error: dict[str, Any] = {
            "code": code,
            "message": message or f"fake {name.lower().replace('_', ' ')}",
            "status": name,
        }
        found = list(details or [])
        if retry_delay is not None:
            found.append(
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": f"{retry_delay}s",
                }
            )
        if found:
            error["details"] = found
        headers = None
        if retry_after is not None:
            headers = {"retry-after": str(math.ceil(retry_after))}
        return cls("status", code, {"error": error}, headers)

    @classmethod
    def context_overflow(cls, limit: int = 1_048_576, tokens: int = 1_048_600) -> GeminiFault:
        return cls.status(
            400,
            f"The input token count ({tokens}) exceeds the maximum number of tokens allowed "
            f"({limit}).",
        )

    @classmethod
    def echo_key(cls, code: int = 400) -> GeminiFault:
        fault = cls.status(code, status="INVALID_ARGUMENT" if code == 400 else None)
        return cls("status", code, fault.body, quotes_key=True)

    @classmethod
    def cut(cls, after_chunks: int = 1, *, clean: bool = True) -> GeminiFault:
        return cls("cut", 200, after_chunks=after_chunks, clean=clean)

    @classmethod
    def redirect(cls, location: str, code: int = 307) -> GeminiFault:
        return cls("status", code, {}, {"location": location})

    @classmethod
    def drop(cls) -> GeminiFault:
        return cls("drop")

    @classmethod
    def raw(cls, body: bytes, status: int = 200) -> GeminiFault:
        return cls("raw", status, bytes(body))

    @classmethod
    def drip(cls, every: float = 0.5) -> GeminiFault:
        return cls("drip", 200, seconds=every)

    @classmethod
    def long_line(cls, size: int = 200 * 1024 * 1024) -> GeminiFault:
        return cls("long_line", 200, after_chunks=size)

    @classmethod
    def malformed(cls, *, after_chunks: int = 0) -> GeminiFault:
        return cls("malformed", 200, after_chunks=after_chunks)

    @classmethod
    def stream_error(
        cls, code: int = 500, message: str | None = None, *, after_chunks: int = 1
    ) -> GeminiFault:
        fault = cls.status(code, message)
        return cls("stream_error", code, fault.body, after_chunks=after_chunks)
