"""``OllamaProvider``: ``OpenAILike`` with Ollama's defaults (local server, no real key)."""

from __future__ import annotations

import os
from typing import Any

from promptimus.llms.openai import OpenAILike

DEFAULT_OLLAMA_URL = "http://localhost:11434/v1"


def ollama_base_url() -> str:
    """``OLLAMA_BASE_URL`` if set, else ``OLLAMA_HOST`` (``host:port`` or a URL) + ``/v1``."""
    explicit = os.environ.get("OLLAMA_BASE_URL")
    if explicit:
        return explicit
    host = os.environ.get("OLLAMA_HOST")
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
