"""Turn a model string like ``"openai:gpt-4o-mini"`` into an LLM provider.

Spec grammar: ``provider:model`` split on the first colon (``ollama:llama3.2:3b`` is provider
``ollama``, model ``llama3.2:3b``), or an alias defined by ``PROMPTIMUS_MODEL_<ALIAS>=<spec>``.
Providers: ``openai`` (Chat Completions: OPENAI_API_KEY, OPENAI_BASE_URL), ``openai-responses``
(OpenAI's Responses API, same variables), ``ollama`` (OLLAMA_BASE_URL /
OLLAMA_HOST), ``gemini`` (GEMINI_API_KEY or GOOGLE_API_KEY, GEMINI_BASE_URL), ``anthropic``
(Claude through the native Messages API: ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL), and any
``<name>`` with ``<NAME>_API_BASE`` (+ ``<NAME>_API_KEY``) set.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from promptimus.errors import ModelResolutionError
from promptimus.protocols import LLMProtocol

ALIAS_PREFIX = "PROMPTIMUS_MODEL_"
BUILTIN_PROVIDERS = ("openai", "openai-responses", "ollama", "gemini", "anthropic")


def _env_name(name: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "_", name).upper()


def _aliases(env: Mapping[str, str]) -> list[str]:
    return sorted(
        k[len(ALIAS_PREFIX) :].lower()
        for k in env
        if k.startswith(ALIAS_PREFIX) and k != ALIAS_PREFIX
    )


def _custom_providers(env: Mapping[str, str]) -> list[str]:
    return sorted(
        k[: -len("_API_BASE")].lower() for k in env if k.endswith("_API_BASE") and len(k) > 9
    )


def _available(env: Mapping[str, str]) -> str:
    providers = [
        *BUILTIN_PROVIDERS,
        *(p for p in _custom_providers(env) if p not in BUILTIN_PROVIDERS),
    ]
    aliases = _aliases(env)
    text = f"Available providers: {', '.join(providers)}"
    return text + (f"; aliases: {', '.join(aliases)}." if aliases else "; no aliases defined.")


def _build(provider: str, model: str, env: Mapping[str, str], spec: str) -> LLMProtocol:
    name = provider.lower()
    if name == "openai":
        from promptimus.llms.openai import OpenAILike

        return OpenAILike(model, env.get("OPENAI_API_KEY"), env.get("OPENAI_BASE_URL"))
    if name == "openai-responses":
        from promptimus.llms.openai_responses import OpenAIResponses

        return OpenAIResponses(
            model, api_key=env.get("OPENAI_API_KEY"), base_url=env.get("OPENAI_BASE_URL") or None
        )
    if name == "anthropic":
        return _anthropic(model, env)
    if name == "ollama":
        from promptimus.llms.ollama import OllamaProvider, ollama_base_url

        return OllamaProvider(model, ollama_base_url(env))
    if name == "gemini":
        return _gemini(model, env)
    prefix = _env_name(provider)
    base_url = env.get(f"{prefix}_API_BASE")
    if base_url:
        from promptimus.llms.openai import OpenAILike

        # Never fall back to OPENAI_API_KEY here: that would send an OpenAI key to another host.
        return OpenAILike(
            model, env.get(f"{prefix}_API_KEY"), base_url, api_key_env=f"{prefix}_API_KEY"
        )
    raise ModelResolutionError(
        f"Unknown provider {provider!r} in model spec {spec!r}. {_available(env)} "
        f"To use an OpenAI-compatible server as {provider!r}, set {prefix}_API_BASE (its base "
        f"URL, e.g. https://host/v1) and {prefix}_API_KEY."
    )


def _slash_hint(spec: str) -> str:
    """For `openai/gpt-4o-mini` (the provider/model spelling of LiteLLM and OpenRouter): the
    spec it most likely means, first in the message."""
    provider, slash, model = spec.partition("/")
    if not slash or not provider or not model:
        return ""
    return (
        f"Did you mean {provider + ':' + model!r}? promptimus separates the provider with a "
        f"colon (a model name may hold a slash itself: 'openrouter:{spec}'). "
    )


def _gemini(model: str, env: Mapping[str, str]) -> LLMProtocol:
    """``gemini:<model>``: the key from GEMINI_API_KEY or GOOGLE_API_KEY (a missing one is
    named here, before any request), the API root from GEMINI_BASE_URL."""
    key = env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY")
    if not key:
        raise ModelResolutionError(
            f"gemini:{model} needs an API key: set GEMINI_API_KEY (or GOOGLE_API_KEY) to a "
            "Google AI Studio key."
        )
    from promptimus.llms.gemini import Gemini

    return Gemini(model, api_key=key, base_url=env.get("GEMINI_BASE_URL") or None)


def _anthropic(model: str, env: Mapping[str, str]) -> LLMProtocol:
    key = env.get("ANTHROPIC_API_KEY")
    if not key:
        raise ModelResolutionError(
            f"No Anthropic API key for 'anthropic:{model}': set the ANTHROPIC_API_KEY "
            "environment variable (and ANTHROPIC_BASE_URL for a server other than Anthropic's), "
            "or build promptimus.llms.Anthropic(model, api_key=...) yourself."
        )
    from promptimus.llms.anthropic import Anthropic

    return Anthropic(model, api_key=key, base_url=env.get("ANTHROPIC_BASE_URL") or None)


def resolve(spec: str | LLMProtocol, *, env: Mapping[str, str] | None = None) -> LLMProtocol:
    """An LLM for ``spec``: providers pass through; strings resolve through aliases to a provider.

    ``env`` defaults to ``os.environ`` (pass a dict to resolve against other settings).
    """
    if not isinstance(spec, str):
        if callable(getattr(spec, "achat", None)):
            return spec
        raise ModelResolutionError(
            f"Cannot use {type(spec).__name__} as an LLM: pass a model string like "
            '"openai:gpt-4o-mini" or an object with an async achat(history, **kwargs) method.'
        )
    environ: Mapping[str, Any] = os.environ if env is None else env
    chain: list[str] = []
    current = spec.strip()
    while True:
        alias_var = ALIAS_PREFIX + _env_name(current) if ":" not in current else None
        if alias_var is not None and alias_var in environ:
            if current.lower() in chain:
                cycle = " -> ".join([*chain, current.lower()])
                raise ModelResolutionError(
                    f"Model alias cycle: {cycle}. Point one of the {ALIAS_PREFIX}* variables "
                    'at a "provider:model" spec.'
                )
            chain.append(current.lower())
            current = environ[alias_var].strip()
            continue
        break
    via = f" (via alias {' -> '.join(chain)})" if chain else ""
    provider, sep, model = current.partition(":")
    if not sep:
        raise ModelResolutionError(
            f"{_slash_hint(current)}"
            f'Model spec {current!r}{via} is neither "provider:model" (e.g. '
            f'"openai:gpt-4o-mini", "ollama:llama3.2:3b") nor a known alias. Define an alias '
            f"with {ALIAS_PREFIX}{_env_name(current) or 'NAME'}=provider:model. "
            f"{_available(environ)}"
        )
    if not provider or not model:
        raise ModelResolutionError(
            f"Model spec {current!r}{via} needs both a provider and a model, like "
            f'"openai:gpt-4o-mini". {_available(environ)}'
        )
    return _build(provider, model, environ, current)
