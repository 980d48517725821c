"""``OllamaProvider``: ``OpenAILike`` with Ollama's defaults (local server, no real key)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from promptimus.llms.openai import OpenAILike

DEFAULT_OLLAMA_URL = "http://localhost:11434/v1"


def ollama_base_url(env: Mapping[str, str] | None = None) -> str:
    """``OLLAMA_BASE_URL`` if set, else ``OLLAMA_HOST`` (``host:port`` or a URL) + ``/v1``.

    Read from ``env`` when it sets either variable, otherwise from ``os.environ``.
    """
    source: Mapping[str, str] = os.environ
    if env is not None and (env.get("OLLAMA_BASE_URL") or env.get("OLLAMA_HOST")):
        source = env
    explicit = source.get("OLLAMA_BASE_URL")
    if explicit:
        return explicit
    host = source.get("OLLAMA_HOST")
    if not host:
        return DEFAULT_OLLAMA_URL
    if "://" not in host:
        host = f"http://{host}"
    host = host.rstrip("/")
    return host if host.endswith("/v1") else f"{host}/v1"


class OllamaProvider(OpenAILike):
    """Chat with a model served by Ollama's OpenAI-compatible API."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str = "ollama",
        **kwargs: Any,
    ) -> None:
        super().__init__(model_name, api_key, base_url or ollama_base_url(), **kwargs)


OllamaLLM = OllamaProvider
