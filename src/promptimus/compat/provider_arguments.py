"""The arguments promptimus 0.1 gave its OpenAI-compatible clients, rewritten into today's.

0.1 wrote ``OpenAILike(model, {"temperature": 0}, 10)`` (request options and concurrency in the
second and third places), ``n_retries=5`` (attempts: today's ``max_retries`` counts the repeats
after the first), ``base_wait=3.0`` (today a `RetryPolicy`'s ``base_delay``) and
``embed_kwargs=`` / ``rerank_kwargs=`` (today ``call_kwargs=``). Without this they would reach
``AsyncOpenAI(...)`` as unknown client options and fail on the first request. Each old form
warns once, at the caller's line, naming today's.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

from promptimus.argument_checks import positive_int
from promptimus.transport.retry import RetryPolicy

__all__ = ["embedder_arguments", "openai_like_arguments", "reranker_arguments"]

Arguments = tuple[tuple[Any, ...], dict[str, Any]]

_RETRY_NAMES = frozenset({"n_retries", "base_wait"})


def openai_like_arguments(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    """`OpenAILike.__init__`'s translator."""
    return _client_arguments(fn, args, kwargs, None)


def embedder_arguments(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    """`OpenAILikeEmbedder.__init__`'s translator (0.1 named its request options
    ``embed_kwargs``)."""
    return _client_arguments(fn, args, kwargs, "embed_kwargs")


def reranker_arguments(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Arguments:
    """`OpenAILikeReranker.__init__`'s translator (0.1 named its request options
    ``rerank_kwargs``)."""
    return _client_arguments(fn, args, kwargs, "rerank_kwargs")


def _client_arguments(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    call_kwargs_alias: str | None,
) -> Arguments:
    """``(self, model_name, api_key, base_url)`` are today's positional places."""
    positional_options = len(args) > 2 and isinstance(args[2], dict)
    if (
        not positional_options
        and _RETRY_NAMES.isdisjoint(kwargs)
        and (call_kwargs_alias is None or call_kwargs_alias not in kwargs)
    ):
        return args, kwargs
    owner = type(args[0]).__name__
    kwargs = dict(kwargs)
    if positional_options:
        kwargs["call_kwargs"] = {**args[2], **(kwargs.get("call_kwargs") or {})}
        _warn(owner, "model_name, {...}", "call_kwargs={...} by keyword")
        if len(args) > 3 and isinstance(args[3], int):  # and 0.1's third place
            kwargs["max_concurrency"] = args[3]
        args = args[:2]
    if "n_retries" in kwargs:
        attempts = positive_int(kwargs.pop("n_retries"), f"{owner}: n_retries")
        kwargs["max_retries"] = attempts - 1
        _warn(owner, "n_retries=N", f"max_retries={attempts - 1} (retries after the first try)")
    if "base_wait" in kwargs:
        base_delay = float(kwargs.pop("base_wait"))
        _warn(owner, "base_wait=", "retry=RetryPolicy(base_delay=...)")
        if kwargs.get("retry") is None:
            default = inspect.signature(fn).parameters["max_retries"].default
            max_retries = kwargs.get("max_retries", default)
            kwargs["retry"] = RetryPolicy(max_retries=max_retries, base_delay=base_delay)
    if call_kwargs_alias is not None and call_kwargs_alias in kwargs:
        options = dict(kwargs.pop(call_kwargs_alias) or {})
        kwargs["call_kwargs"] = {**options, **(kwargs.get("call_kwargs") or {})}
        _warn(owner, f"{call_kwargs_alias}=", "call_kwargs=")
    return args, kwargs


def _warn(owner: str, old: str, new: str) -> None:
    # this frame, `_client_arguments`, the translator, the constructor's wrapper, the caller
    warnings.warn(
        f"{owner}({old}) is promptimus 0.1's spelling; use {new} instead.",
        DeprecationWarning,
        stacklevel=5,
    )
