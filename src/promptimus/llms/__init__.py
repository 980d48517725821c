"""LLM providers behind ``LLMProtocol``, test doubles, and model-string resolution.

Names are imported lazily so ``import promptimus.llms`` does not import ``openai``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._compat_seam import compat_names
from promptimus._lazy import lazy_exports

if TYPE_CHECKING:
    from promptimus.llms.accumulator import MessageAccumulator, aaccumulate, accumulate
    from promptimus.llms.anthropic import Anthropic
    from promptimus.llms.cached import CachedLLM
    from promptimus.llms.capabilities import ProviderCapabilities, capabilities
    from promptimus.llms.claude import Claude
    from promptimus.llms.dummy import DummyLLM
    from promptimus.llms.fallback import FallbackLLM, falls_through
    from promptimus.llms.gemini import Gemini
    from promptimus.llms.memory_cache import MemoryCache
    from promptimus.llms.ollama import OllamaLLM, OllamaProvider
    from promptimus.llms.openai import OpenAILike
    from promptimus.llms.openai_responses import OpenAIResponses
    from promptimus.llms.resolve import resolve
    from promptimus.llms.response_cache import ResponseCache
    from promptimus.llms.scripted import ScriptedLLM
    from promptimus.llms.sqlite_cache import SQLiteCache
    from promptimus.protocols import LLMProtocol

_EXPORTS = {
    "LLMProtocol": "promptimus.protocols",
    "ProviderCapabilities": "capabilities",
    "capabilities": "capabilities",
    "MessageAccumulator": "accumulator",
    "accumulate": "accumulator",
    "aaccumulate": "accumulator",
    "OpenAILike": "openai",
    "OpenAIResponses": "openai_responses",
    "Claude": "claude",
    "OllamaProvider": "ollama",
    "OllamaLLM": "ollama",
    "DummyLLM": "dummy",
    "ScriptedLLM": "scripted",
    "resolve": "resolve",
    "FallbackLLM": "fallback",
    "falls_through": "fallback",
    "CachedLLM": "cached",
    "ResponseCache": "response_cache",
    "MemoryCache": "memory_cache",
    "SQLiteCache": "sqlite_cache",
    "Gemini": "gemini",
    "Anthropic": "anthropic",
}

__all__ = [
    "Anthropic",
    "CachedLLM",
    "Claude",
    "DummyLLM",
    "FallbackLLM",
    "LLMProtocol",
    "MemoryCache",
    "MessageAccumulator",
    "OllamaLLM",
    "OllamaProvider",
    "OpenAILike",
    "OpenAIResponses",
    "ProviderCapabilities",
    "ResponseCache",
    "SQLiteCache",
    "ScriptedLLM",
    "aaccumulate",
    "accumulate",
    "capabilities",
    "falls_through",
    "resolve",
]
__all__ += ["Gemini"]


_exported, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
__getattr__ = compat_names(__name__, _exported)  # 0.1's spellings, with a warning
