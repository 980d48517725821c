"""Retrieval as promptimus 0.1 called it: its argument orders, its counts and its reranker
protocol.

- ``RAGModule(vector_store, text_store)``: 0.1 took the stores first; today's first places are
  ``(memory_size, system_prompt, query_template)`` and stores go by keyword.
- ``RetrievalModule(n_results=N)`` / ``RAGModule(n_results=N)``: an early 0.1 API (its
  SKILL.md) with one count for everything; today ``n_semantic``, ``n_text``, ``n_after_rerank``.
- 0.1's reranker protocol is one call, ``forward(query, result_lists)``, that fuses the unfused
  rankings and reranks them at once. A reranker written to it still works in a
  `RetrievalModule`, `RRFReranker.forward` still takes the query first, and
  `OpenAILikeReranker` still answers that call.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from promptimus.errors import InvalidArgument

if TYPE_CHECKING:
    from promptimus.dto import SearchHit

__all__ = [
    "rag_arguments",
    "rerank_result_lists",
    "rerank_unfused",
    "retrieval_arguments",
    "rrf_forward_arguments",
]

Arguments = tuple[tuple[Any, ...], dict[str, Any]]

# from a helper a translator calls: the translator, the constructor's wrapper, the user's line
_CALLER = 4


def rag_arguments(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    """`RAGModule.__init__`'s translator: 0.1's store-first order and ``n_results``."""
    first = args[1] if len(args) > 1 else kwargs.get("memory_size", 0)
    if isinstance(first, int) and "n_results" not in kwargs:
        return args, kwargs
    kwargs = dict(kwargs)
    n_results = kwargs.pop("n_results", None)
    values = inspect.signature(fn).bind(*args, **kwargs).arguments
    if not isinstance(values.get("memory_size", 0), int):
        stores = [values.pop("memory_size")]
        if "system_prompt" in values:
            stores.append(values.pop("system_prompt"))
        if not all(map(_is_store, stores)):
            raise InvalidArgument(
                "RAGModule's positional arguments are (memory_size, system_prompt, "
                "query_template); pass stores by keyword: RAGModule(vector_store=..., "
                f"text_store=...). Got {type(first).__name__} for memory_size."
            )
        _warn(
            "RAGModule(store, ...) is promptimus 0.1's order; use "
            "RAGModule(vector_store=..., text_store=...) instead."
        )
        values["vector_store"] = stores[0]
        if len(stores) > 1:
            values["text_store"] = stores[1]
    if n_results is not None:
        _one_count("RAGModule", values, n_results)
    return (values.pop("self"),), values


def retrieval_arguments(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    """`RetrievalModule.__init__`'s translator: ``n_results``."""
    if "n_results" not in kwargs:
        return args, kwargs
    kwargs = dict(kwargs)
    n_results = kwargs.pop("n_results")
    values = inspect.signature(fn).bind(*args, **kwargs).arguments
    if n_results is not None:
        _one_count("RetrievalModule", values, n_results)
    return (values.pop("self"),), values


def rrf_forward_arguments(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    """`RRFReranker.forward`'s translator: 0.1's ``forward(query, result_lists)`` (fusion
    ignores the query)."""
    if len(args) > 1 and isinstance(args[1], str):
        return (args[0], *args[2:]), kwargs
    if "result_lists" in kwargs or "query" in kwargs:
        kwargs = dict(kwargs)
        kwargs.pop("query", None)
        if "result_lists" in kwargs:
            kwargs["rankings"] = kwargs.pop("result_lists")
    return args, kwargs


async def rerank_unfused(
    reranker: Any, query: str, rankings: list[list[SearchHit]], top_n: int
) -> list[SearchHit]:
    """A reranker of 0.1's protocol in a `RetrievalModule`: it gets every ranking unfused."""
    return list(await reranker.forward(query, rankings))[:top_n]


async def rerank_result_lists(
    reranker: Any, query: str, result_lists: list[list[SearchHit]], **kwargs: Any
) -> list[SearchHit]:
    """0.1's reranker call on a reranker of today's protocol (``rerank``): rescore the union of
    ``result_lists`` (the first hit of each id), best first."""
    unique: dict[str, SearchHit] = {}
    for results in result_lists:
        for hit in results:
            unique.setdefault(hit.id, hit)
    return await reranker.rerank(query, list(unique.values()))  # type: ignore[no-any-return]


def _one_count(owner: str, values: dict[str, Any], n_results: int) -> None:
    """``n_results=N`` (one count for everything) as today's three counts, warned."""
    warnings.warn(
        f"{owner}(n_results=N) is promptimus 0.1's spelling; use n_semantic=N, n_text=N, "
        "n_after_rerank=N instead.",
        DeprecationWarning,
        stacklevel=_CALLER,
    )
    values.update(n_semantic=n_results, n_text=n_results, n_after_rerank=n_results)


def _is_store(value: object) -> bool:
    return any(hasattr(value, name) for name in ("search", "vector_search", "text_search"))


def _warn(message: str) -> None:
    warnings.warn(message, DeprecationWarning, stacklevel=_CALLER)
