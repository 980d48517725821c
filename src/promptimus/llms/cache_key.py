"""The key of a response-cache entry: a hash of everything that determines the reply.

``request_key(llm, history, kwargs)`` is the SHA-256 of the canonical JSON (sorted keys, no
whitespace) of:
- the provider's identity (`provider_identity`): its class, ``model_name`` and where it sends
  requests (``base_url``), never its API key; a provider may define ``cache_identity()`` to say
  more (a `FallbackLLM` lists every provider of its chain);
- the request options: the provider's ``call_kwargs`` overridden by the call's kwargs (tools,
  temperature, response_format, ...), without the ones that only change how the request travels
  (``stream``, ``stream_options``, ``timeout``, ``extra_headers``);
- the messages with everything sent to a model (role, text, images, tool calls, tool-call
  ids), without reply metadata (usage, finish_reason, model_name, context_edits).

Whether a request may be cached at all is `is_deterministic`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from promptimus.dto import Message

__all__ = ["KEY_VERSION", "is_deterministic", "provider_identity", "request_key"]

KEY_VERSION = "promptimus-response-cache/1"
"""Part of every key: a change in what a key covers gets a new version, so old entries miss."""

_TRANSPORT_OPTIONS = frozenset({"stream", "stream_options", "timeout", "extra_headers"})
# a set, not a frozenset: the type pydantic's `exclude=` declares (read only all the same)
_REPLY_METADATA: set[str] = {"usage", "finish_reason", "model_name", "context_edits"}


def provider_identity(llm: Any) -> Any:
    """What identifies ``llm`` in a key: ``llm.cache_identity()`` if it has one, else its class,
    ``model_name`` and ``base_url`` (never the API key, so rotating a key keeps the cache)."""
    custom = getattr(llm, "cache_identity", None)
    if callable(custom):
        return custom()
    cls = type(llm)
    return {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "model": getattr(llm, "model_name", None),
        "base_url": _text_or_none(getattr(llm, "base_url", None)),
    }


def request_options(llm: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The options the request is sent with: the provider's defaults, then the call's."""
    defaults = getattr(llm, "call_kwargs", None) or {}
    options = {**defaults, **kwargs}
    for name in _TRANSPORT_OPTIONS.intersection(options):
        del options[name]
    return options


def is_deterministic(options: Mapping[str, Any]) -> bool:
    """Whether a request with these options is deterministic by its parameters: its
    ``temperature`` is 0. A request that does not set one gets the server's default (1 on
    OpenAI), so it is not. (Even at temperature 0 some servers vary slightly; caching then
    pins one of their answers, which is what evaluation and tests want.)"""
    temperature = options.get("temperature")
    return (
        isinstance(temperature, int | float)
        and not isinstance(temperature, bool)
        and temperature == 0
    )


def request_key(llm: Any, history: list[Message], options: Mapping[str, Any]) -> str:
    """The hex SHA-256 key of a request. Raises ``TypeError`` when an option cannot be written
    as JSON (such a request is not cached)."""
    payload = {
        "version": KEY_VERSION,
        "provider": provider_identity(llm),
        "options": dict(options),
        "messages": [
            message.model_dump(mode="json", exclude=_REPLY_METADATA, exclude_defaults=True)
            for message in history
        ],
    }
    text = json.dumps(
        payload,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        default=_json_default,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def _json_default(value: Any) -> Any:
    """JSON for option values that are not JSON already (pydantic models and model classes,
    sets); anything else makes the request uncacheable (``TypeError``)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    schema = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and callable(schema):
        return {"pydantic_model": f"{value.__module__}.{value.__qualname__}", "schema": schema()}
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
