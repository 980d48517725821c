"""`OpenAILikeReranker`: a client for Cohere/Jina-style ``POST {base_url}/rerank`` endpoints.

The request is ``{"model", "query", "documents": [text, ...], "top_n"}`` and the answer
``{"results": [{"index": i, "relevance_score": s}, ...]}`` — the shape Cohere, Jina, Voyage, vLLM,
Infinity and LocalAI share. Results are mapped back to the input hits by ``index``.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from promptimus._compat_seam import CompatMethod, compat_calls
from promptimus.errors import InvalidArgument, MalformedReply, ProviderConfigError
from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.per_loop import PerLoop
from promptimus.transport.retry import RetryPolicy

if TYPE_CHECKING:
    import httpx

    from promptimus.dto import SearchHit

__all__ = ["OpenAILikeReranker"]


class _HTTPStatusError(Exception):
    """A non-2xx answer, shaped like the SDK's errors (``status_code``, ``response``, ``body``) so
    `RetryPolicy` classifies it (429/5xx retried, honouring ``Retry-After``; 4xx not)."""

    def __init__(self, response: httpx.Response) -> None:
        self.status_code = response.status_code
        self.response = response
        try:
            self.body: Any = response.json()
        except ValueError:
            self.body = response.text[:500] or None
        super().__init__(f"HTTP {response.status_code}")


class OpenAILikeReranker:
    """Rerank hits with a hosted or local cross-encoder behind a ``/rerank`` endpoint.

    - ``base_url`` is the API root, e.g. ``https://api.jina.ai/v1`` or ``http://localhost:8000/v1``
      (``/rerank`` is appended).
    - ``api_key`` (or the variable named by ``api_key_env``) is sent as ``Authorization: Bearer``;
      with neither, no auth header is sent (local servers). The key never appears in a repr or an
      error message.
    - ``top_n`` is sent to the server and also enforced locally.
    - Transient failures (429, 5xx, timeouts) are retried by the shared `RetryPolicy`.
    - ``call_kwargs`` and ``extra_body`` are merged into every request (e.g.
      ``{"return_documents": False}``).
    """

    @compat_calls("provider_arguments:reranker_arguments")
    def __init__(
        self,
        model_name: str,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        api_key_env: str | None = None,
        max_retries: int = 4,
        retry: RetryPolicy | None = None,
        timeout: float | None = 60.0,
        max_concurrency: int | ConcurrencyLimit | None = None,
        call_kwargs: dict[str, Any] | None = None,
        extra_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        if not base_url:
            raise ProviderConfigError(
                f"OpenAILikeReranker({model_name!r}) needs base_url=..., the API root that serves "
                "POST /rerank (e.g. 'https://api.jina.ai/v1' or 'http://localhost:8000/v1')."
            )
        self.model_name = model_name
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self._api_key = api_key
        self.retry = retry if retry is not None else RetryPolicy(max_retries=max_retries)
        self.timeout = timeout
        self.extra_body = {**(call_kwargs or {}), **(extra_body or {})}
        self._headers = dict(headers or {})
        if isinstance(max_concurrency, int):
            max_concurrency = ConcurrencyLimit(max_concurrency)
        self._limit = max_concurrency
        self._clients: PerLoop[httpx.AsyncClient] = PerLoop(self._build_client)
        self.request_count = 0

    def _key(self) -> str | None:
        if self._api_key:
            return self._api_key
        if self.api_key_env:
            return os.environ.get(self.api_key_env) or None
        return None

    def secrets(self) -> tuple[str, ...]:
        """The credentials this reranker sends (its API key), for redaction from any text."""
        key = self._key()
        return (key,) if key else ()

    def _build_client(self) -> httpx.AsyncClient:
        import httpx

        headers = dict(self._headers)
        key = self._key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return httpx.AsyncClient(timeout=self.timeout, headers=headers)

    async def rerank(
        self, query: str, hits: list[SearchHit], top_n: int | None = None
    ) -> list[SearchHit]:
        if top_n is not None and top_n < 0:
            raise InvalidArgument(f"top_n must be >= 0 or None, got {top_n}.")
        if not hits or top_n == 0:
            return []
        body: dict[str, Any] = {
            "model": self.model_name,
            "query": query,
            "documents": [hit.document for hit in hits],
            **self.extra_body,
        }
        if top_n is not None:
            body["top_n"] = min(top_n, len(hits))
        key = self._key()

        async def attempt() -> list[SearchHit]:
            return self._map_results(await self._post(body), hits, top_n)

        return await self.retry.run(
            attempt,
            context=f"rerank with {self.model_name!r} at {self.base_url}",
            redact=(key,) if key else (),
        )

    forward = CompatMethod("retrieval:rerank_result_lists")

    async def _post(self, body: dict[str, Any]) -> Any:
        client = self._clients.get()
        if self._limit is None:
            response = await client.post(f"{self.base_url}/rerank", json=body)
        else:
            async with self._limit.slot():
                response = await client.post(f"{self.base_url}/rerank", json=body)
        self.request_count += 1
        if response.status_code >= 400:
            raise _HTTPStatusError(response)
        return response.json()

    def _map_results(self, data: Any, hits: list[SearchHit], top_n: int | None) -> list[SearchHit]:
        """The hits the reply ranks; `MalformedReply` (retried once) if it is not a list of
        results with an index among the hits and a finite score, or ranks nothing at all."""
        results = data.get("results", data.get("data")) if isinstance(data, dict) else data
        if not isinstance(results, list):
            raise MalformedReply(
                f"no 'results' list (got {type(data).__name__}"
                f"{f' with results {results!r:.40}' if isinstance(data, dict) else ''}); check "
                "that base_url serves a Cohere/Jina-style /rerank API"
            )
        if not results:
            raise MalformedReply(f"an empty 'results' list for {len(hits)} documents")
        scored: dict[int, float] = {}
        for item in results:
            index = item.get("index") if isinstance(item, dict) else None
            score = (
                item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
            )
            if (
                not isinstance(index, int)
                or isinstance(index, bool)
                or not 0 <= index < len(hits)
                or not isinstance(score, int | float)
                or isinstance(score, bool)
                or not math.isfinite(score)
            ):
                raise MalformedReply(
                    f"an invalid result {item!r:.80}: each needs an 'index' in [0, {len(hits)}) "
                    "and a finite numeric 'relevance_score'"
                )
            scored.setdefault(index, float(score))
        order = sorted(scored, key=lambda i: (-scored[i], i))
        if top_n is not None:
            order = order[:top_n]
        return [replace(hits[i], score=scored[i]) for i in order]

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (others close when their loop ends)."""
        await self._clients.get().aclose()

    def __repr__(self) -> str:
        return f"OpenAILikeReranker(model_name={self.model_name!r}, base_url={self.base_url!r})"
