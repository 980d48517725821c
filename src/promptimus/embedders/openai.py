"""``OpenAILikeEmbedder``: embeddings from any OpenAI-compatible ``/embeddings`` endpoint.

Large inputs are split into batches of ``batch_size`` texts (so ``ceil(N / batch_size)`` requests),
the batches run concurrently up to ``max_concurrency`` in flight, and the vectors come back in the
order of the input texts. Retries, rate limits and key handling are the ones `OpenAILike` uses.
"""

from __future__ import annotations

import asyncio
from typing import Any

from promptimus.dto import Usage
from promptimus.errors import InvalidArgument, ProviderResponseError
from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.openai_endpoint import CHARS_PER_TOKEN, OpenAIEndpoint
from promptimus.transport.rate_limit import RateLimiter, Reservation
from promptimus.transport.retry import RetryPolicy

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
    """

    _request_kind = "embedding"
    _original_call_kwargs = "embed_kwargs"

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
        **client_kwargs: Any,
    ) -> None:
        if batch_size < 1:
            raise InvalidArgument(f"batch_size must be >= 1, got {batch_size}.")
        if dimensions is not None and dimensions < 1:
            raise InvalidArgument(f"dimensions must be >= 1 (or None), got {dimensions}.")
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

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model_name={self.model_name!r}, base_url={self.base_url!r}, "
            f"batch_size={self.batch_size})"
        )

    # --- public API --------------------------------------------------------------------------

    async def aembed(self, text: str) -> list[float]:
        return (await self._embed_batch([text]))[0]

    async def aembed_batch(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in input order, using ``ceil(len(texts) / batch_size)`` requests."""
        if isinstance(texts, str):
            raise InvalidArgument(
                "aembed_batch takes a list of texts, got a single str; use aembed(text) instead."
            )
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
        client = self._factory.get()
        tokens = sum(map(len, texts)) / CHARS_PER_TOKEN if self._tpm is not None else 0.0

        async def attempt() -> tuple[Any, Reservation | None]:
            slot, reservation = await self._admit(tokens)
            try:
                return await client.embeddings.create(**params), reservation
            finally:
                if slot is not None:
                    slot.release()

        response, reservation = await self.retry.run(
            attempt, context=self._context, redact=self._factory.secrets()
        )
        vectors = self._vectors(response, len(texts))
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None) or 0
        total_tokens = getattr(usage, "total_tokens", None) or prompt_tokens
        reported = prompt_tokens or total_tokens
        self._record(
            Usage(prompt_tokens=prompt_tokens, total_tokens=total_tokens) if reported else None,
            reservation,
        )
        return vectors

    def _vectors(self, response: Any, expected: int) -> list[list[float]]:
        data = list(getattr(response, "data", None) or [])
        if len(data) != expected:
            raise ProviderResponseError(
                f"{self._context} returned {len(data)} embeddings for {expected} inputs; the "
                "server dropped inputs (some servers cap the batch: lower batch_size)."
            )
        # Servers may answer out of order; `index` says which input each vector belongs to.
        if any(item.index != position for position, item in enumerate(data)):
            data.sort(key=lambda item: item.index)
            if [item.index for item in data] != list(range(expected)):
                raise ProviderResponseError(
                    f"{self._context} returned embeddings with indexes that do not match the "
                    "inputs; the server is not OpenAI-compatible for /embeddings."
                )
        vectors = [item.embedding for item in data]
        if isinstance(vectors[0], str):
            raise ProviderResponseError(
                f"{self._context} returned base64 strings; do not set encoding_format in "
                "call_kwargs (the SDK decodes base64 only when it chose it itself)."
            )
        return vectors
