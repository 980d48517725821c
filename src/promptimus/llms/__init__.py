"""LLM providers behind ``LLMProtocol``, test doubles, and model-string resolution.

Names are imported lazily so ``import promptimus.llms`` does not import ``openai``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

if TYPE_CHECKING:
    from promptimus.llms.accumulator import MessageAccumulator, aaccumulate, accumulate
    from promptimus.llms.base import LLMProtocol
    from promptimus.llms.capabilities import ProviderCapabilities, capabilities
    from promptimus.llms.claude import Claude
    from promptimus.llms.dummy import DummyLLM, DummyLLm
    from promptimus.llms.ollama import OllamaLLM, OllamaProvider
    from promptimus.llms.openai import OpenAILike
    from promptimus.llms.resolve import resolve
    from promptimus.llms.scripted import ScriptedLLM

_EXPORTS = {
    "LLMProtocol": "base",
    "ProviderCapabilities": "capabilities",
    "capabilities": "capabilities",
    "MessageAccumulator": "accumulator",
    "accumulate": "accumulator",
    "aaccumulate": "accumulator",
    "OpenAILike": "openai",
    "Claude": "claude",
    "OllamaProvider": "ollama",
    "OllamaLLM": "ollama",
    "DummyLLm": "dummy",
    "DummyLLM": "dummy",
    "ScriptedLLM": "scripted",
    "resolve": "resolve",
}

__all__ = [
    "Claude",
    "DummyLLM",
    "DummyLLm",
    "LLMProtocol",
    "MessageAccumulator",
    "OllamaLLM",
    "OllamaProvider",
    "OpenAILike",
    "ProviderCapabilities",
    "ScriptedLLM",
    "aaccumulate",
    "accumulate",
    "capabilities",
    "resolve",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
