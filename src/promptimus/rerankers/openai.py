"""`OpenAILikeReranker`: a client for Cohere/Jina-style ``POST {base_url}/rerank`` endpoints.

The request is ``{"model", "query", "documents": [text, ...], "top_n"}`` and the answer
``{"results": [{"index": i, "relevance_score": s}, ...]}`` — the shape Cohere, Jina, Voyage, vLLM,
Infinity and LocalAI share. Results are mapped back to the input hits by ``index``. Requests go
through the same `OpenAIEndpoint` as chat and embeddings: the official SDK's client, the one retry
policy, the concurrency cap and the key's redaction; the body goes out as built and the reply is
read as JSON (`promptimus.transport.openai_wire`), or, with ``sdk_requests=True``, through the
SDK's ``client.post`` and its response parsing.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from promptimus._compat_seam import CompatMethod, compat_calls
from promptimus.argument_checks import non_negative_int
from promptimus.errors import MalformedReply, ProviderConfigError
from promptimus.transport.concurrency import ConcurrencyLimit
from promptimus.transport.openai_endpoint import OpenAIEndpoint
from promptimus.transport.openai_wire import response_body
from promptimus.transport.retry import RetryPolicy
from promptimus.transport.secret_scrub import shown_url

if TYPE_CHECKING:
    from openai import RequestOptions

    from promptimus.dto import SearchHit

__all__ = ["OpenAILikeReranker"]


class OpenAILikeReranker(OpenAIEndpoint):
    """Rerank hits with a hosted or local cross-encoder behind a ``/rerank`` endpoint.

    - ``base_url`` is the API root, e.g. ``https://api.jina.ai/v1`` or ``http://localhost:8000/v1``
      (``/rerank`` is appended).
    - ``api_key`` (or the variable named by ``api_key_env``) is sent as ``Authorization: Bearer``;
      with neither, no auth header is sent (local servers). The key never appears in a repr or an
      error message.
    - ``top_n`` is sent to the server and also enforced locally.
    - Transient failures (429, 5xx, timeouts) are retried by the shared `RetryPolicy`.
    - ``call_kwargs`` and ``extra_body`` are merged into every request body (e.g.
      ``{"return_documents": False}``); ``headers`` are sent with every request.
    - ``request_count`` counts the server's answers, errors included.
    - ``sdk_requests=True`` sends every request through the SDK's ``client.post`` (its request
      building and response parsing included) instead of posting the JSON as built: for a
      server or proxy that needs it.
    """

    _request_kind = "rerank"
    _key_required = False

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
        sdk_requests: bool = False,
    ) -> None:
        if not base_url:
            raise ProviderConfigError(
                f"OpenAILikeReranker({model_name!r}) needs base_url=..., the API root that serves "
                "POST /rerank (e.g. 'https://api.jina.ai/v1' or 'http://localhost:8000/v1')."
            )
        super().__init__(
            model_name,
            api_key,
            base_url.rstrip("/"),
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            timeout=timeout,
            requests_per_minute=None,
            tokens_per_minute=None,
            rate_period=60.0,
            call_kwargs={**(call_kwargs or {}), **(extra_body or {})},
            retry=retry,
            api_key_env=api_key_env,
            client_kwargs={"default_headers": headers} if headers else {},
        )
        self.sdk_requests = sdk_requests

    async def rerank(
        self, query: str, hits: list[SearchHit], top_n: int | None = None
    ) -> list[SearchHit]:
        if top_n is not None:
            top_n = non_negative_int(top_n, "top_n (or None)")
        if not hits or top_n == 0:
            return []
        body: dict[str, Any] = {
            "model": self.model_name,
            "query": query,
            "documents": [hit.document for hit in hits],
            **self.call_kwargs,
        }
        if top_n is not None:
            body["top_n"] = min(top_n, len(hits))

        async def attempt() -> list[SearchHit]:
            return self._map_results(await self._post(body), hits, top_n)

        return await self.retry.run(
            attempt,
            context=f"rerank with {self.model_name!r} at {shown_url(self.base_url)}",
            redact=self._factory.secrets(),
        )

    forward = CompatMethod("retrieval:rerank_result_lists")

    async def _post(self, body: dict[str, Any]) -> Any:
        connection = self._factory.connection()
        slot, reservation = await self._admit(0.0)
        try:
            if self.sdk_requests:
                reply = await connection.client.post(
                    "/rerank",
                    cast_to=object,
                    body=body,
                    options=cast("RequestOptions", connection.auth_options),
                )
            else:
                reply = response_body(await connection.post_body("/rerank", body))
        except Exception as exc:
            if getattr(exc, "status_code", None) is not None:  # the server answered, with an error
                with self._lock:
                    self._request_count += 1
            raise
        finally:
            if slot is not None:
                slot.release()
        self._record(None, reservation)
        return reply

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
        await self._factory.get().close()

    def __repr__(self) -> str:
        shown = shown_url(self.base_url)
        return f"OpenAILikeReranker(model_name={self.model_name!r}, base_url={shown!r})"
