"""``OpenAILikeEmbedder``: embeddings from any OpenAI-compatible ``/embeddings`` endpoint.

Large inputs are split into batches of ``batch_size`` texts (so ``ceil(N / batch_size)`` requests),
the batches run concurrently up to ``max_concurrency`` in flight, and the vectors come back in the
order of the input texts. Retries, rate limits, key handling and the way requests are sent (the
JSON as built, without the SDK's per-call transform, unless ``sdk_requests=True``) are the ones
`OpenAILike` uses.
"""

from __future__ import annotations

import array
import asyncio
import base64
import math
import sys
from typing import Any

from promptimus._compat_seam import compat_calls
from promptimus.argument_checks import positive_int
from promptimus.dto import Usage
from promptimus.errors import InvalidArgument, MalformedReply, UnknownRequestOption
from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.openai_endpoint import CHARS_PER_TOKEN, OpenAIEndpoint
from promptimus.transport.openai_wire import response_body, unknown_options
from promptimus.transport.rate_limit import RateLimiter, Reservation
from promptimus.transport.request_text import check_request_text
from promptimus.transport.retry import RetryPolicy
from promptimus.transport.secret_scrub import shown_url

__all__ = ["OpenAILikeEmbedder"]


class OpenAILikeEmbedder(OpenAIEndpoint):
    """Embed text with an OpenAI-compatible server (OpenAI, Ollama, vLLM, TEI, LM Studio...).

    - ``batch_size``: texts per request. ``max_concurrency``: requests in flight at once (an int,
      a shared ``ConcurrencyLimit``, or ``None`` for no cap).
    - ``dimensions``: asked of models that can shorten their vectors (``text-embedding-3-*``).
    - ``max_retries`` / ``retry``: 429, 5xx, timeouts and connection errors are retried with
      backoff honouring ``Retry-After``; other errors raise ``ProviderResponseError``.
    - ``requests_per_minute`` / ``tokens_per_minute``: sliding-window limits (tokens estimated
      at 4 characters each, corrected with the reported usage).
    - ``request_count`` and ``usage`` total the completed requests.
    - ``sdk_requests=True`` sends every request through ``client.embeddings.create`` (the
      SDK's request transform and response objects included) instead of posting the JSON.
    """

    _request_kind = "embedding"

    @compat_calls("provider_arguments:embedder_arguments")
    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        batch_size: int = 256,
        max_concurrency: int | ConcurrencyLimit | None = 4,
        max_retries: int = 4,
        dimensions: int | None = None,
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
        batch_size = positive_int(batch_size, "batch_size")
        if dimensions is not None:
            dimensions = positive_int(dimensions, "dimensions (or None)")
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
        self.batch_size = batch_size
        self.dimensions = dimensions
        self.sdk_requests = sdk_requests

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model_name={self.model_name!r}, "
            f"base_url={shown_url(self.base_url)!r}, "
            f"batch_size={self.batch_size})"
        )

    # --- public API --------------------------------------------------------------------------

    async def aembed(self, text: str) -> list[float]:
        check_request_text(text, "text", request=f"the {self._context}")
        return (await self._embed_batch([text]))[0]

    async def aembed_batch(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in input order, using ``ceil(len(texts) / batch_size)`` requests."""
        if isinstance(texts, str):
            raise InvalidArgument(
                "aembed_batch takes a list of texts, got a single str; use aembed(text) instead."
            )
        check_request_text(texts, "texts", request=f"the {self._context}")
        size = self.batch_size
        if len(texts) <= size:
            return await self._embed_batch(list(texts)) if texts else []
        # One task per batch; the concurrency limit decides how many are on the wire at once.
        tasks = [
            asyncio.ensure_future(self._embed_batch(texts[start : start + size]))
            for start in range(0, len(texts), size)
        ]
        try:
            batches = await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return [vector for batch in batches for vector in batch]

    # --- request plumbing --------------------------------------------------------------------

    async def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        params: dict[str, Any] = {"model": self.model_name, **self.call_kwargs, "input": texts}
        if self.dimensions is not None:
            params["dimensions"] = self.dimensions
        # Asked explicitly (the SDK asks for base64 anyway when not told): the reply then comes
        # unconverted, and `vectors_from_reply` checks and decodes it.
        params.setdefault("encoding_format", "base64")
        connection = self._factory.connection()
        unknown = unknown_options(params, type(connection.client.embeddings).create)
        if unknown:
            raise UnknownRequestOption(
                f"The {self._context} got option(s) the openai SDK's embeddings.create does "
                f"not take: {', '.join(unknown)}. Pass fields a server adds to the API in "
                "extra_body={...}."
            )
        tokens = sum(map(len, texts)) / CHARS_PER_TOKEN if self._tpm is not None else 0.0

        async def attempt() -> tuple[list[list[float]], Any, Reservation | None]:
            slot, reservation = await self._admit(tokens)
            try:
                if self.sdk_requests:
                    reply = await connection.client.embeddings.create(**params)
                else:
                    reply = response_body(await connection.post("/embeddings", params))
            finally:
                if slot is not None:
                    slot.release()
            return vectors_from_reply(reply, len(texts)), reply, reservation

        vectors, reply, reservation = await self.retry.run(
            attempt, context=self._context, redact=self._factory.secrets()
        )
        usage = reply.get("usage") if isinstance(reply, dict) else getattr(reply, "usage", None)
        prompt_tokens = _count(_field(usage, "prompt_tokens"))
        total_tokens = _count(_field(usage, "total_tokens")) or prompt_tokens
        reported = prompt_tokens or total_tokens
        self._record(
            Usage(prompt_tokens=prompt_tokens, total_tokens=total_tokens) if reported else None,
            reservation,
        )
        return vectors


def _field(data: Any, name: str) -> Any:
    """A field of a JSON object or of the SDK's object for it."""
    return data.get(name) if isinstance(data, dict) else getattr(data, name, None)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _vector(item: Any, position: int) -> tuple[int, list[float]]:
    where = f"data[{position}]"
    if not isinstance(item, dict):
        raise MalformedReply(f"{where} is {type(item).__name__}, expected an embedding object")
    index = item.get("index", position)
    if not isinstance(index, int) or isinstance(index, bool):
        raise MalformedReply(f"{where}.index is {index!r}, expected an integer")
    raw = item.get("embedding")
    if isinstance(raw, str):  # base64 of little-endian float32, as OpenAI sends it
        try:
            packed = base64.b64decode(raw, validate=True)
        except ValueError as exc:
            raise MalformedReply(f"{where}.embedding is not valid base64 ({exc})") from None
        if len(packed) % 4:
            raise MalformedReply(f"{where}.embedding holds {len(packed)} bytes, not float32s")
        numbers = array.array("f", packed)
        if sys.byteorder == "big":
            numbers.byteswap()
        vector = numbers.tolist()
    elif isinstance(raw, list):
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in raw):
            bad = next(x for x in raw if not isinstance(x, int | float) or isinstance(x, bool))
            raise MalformedReply(f"{where}.embedding holds {bad!r}, expected numbers")
        vector = [float(x) for x in raw]
    else:
        state = "missing" if "embedding" not in item else f"{type(raw).__name__} {raw!r:.40}"
        raise MalformedReply(f"{where}.embedding is {state}, expected a list of numbers")
    if not vector:
        raise MalformedReply(f"{where}.embedding is empty")
    if not all(math.isfinite(x) for x in vector):
        raise MalformedReply(f"{where}.embedding holds NaN or infinity")
    return index, vector


def vectors_from_reply(response: Any, expected: int) -> list[list[float]]:
    """The vectors of an embeddings reply, in input order; `MalformedReply` names what is wrong:
    not an object, no ``data`` list, a count or indexes that do not match the inputs, a vector
    that is missing, empty, not numbers, NaN/infinite, or of another length than the rest."""
    data = response
    if not isinstance(data, dict):
        to_dict = getattr(response, "to_dict", None)
        if callable(to_dict) and hasattr(type(response), "model_fields"):
            data = to_dict(warnings=False)
    if not isinstance(data, dict):
        shown = repr(response)[:60]
        raise MalformedReply(f"the body is {type(response).__name__} {shown}, not a JSON object")
    items = data.get("data")
    if not isinstance(items, list):
        state = "missing" if "data" not in data else f"{type(items).__name__} {items!r:.40}"
        raise MalformedReply(f"data is {state}, expected a list of embeddings")
    if len(items) != expected:
        raise MalformedReply(
            f"{len(items)} embeddings for {expected} inputs: the server dropped inputs (some "
            "servers cap the batch: lower batch_size)"
        )
    indexed = dict(_vector(item, position) for position, item in enumerate(items))
    # Servers may answer out of order; `index` says which input each vector belongs to.
    if sorted(indexed) != list(range(expected)):
        raise MalformedReply(
            f"the embeddings' indexes {sorted(indexed)[:10]} do not match the {expected} inputs"
        )
    vectors = [indexed[i] for i in range(expected)]
    sizes = {len(vector) for vector in vectors}
    if len(sizes) > 1:
        raise MalformedReply(f"the vectors differ in length ({sorted(sizes)})")
    return vectors
