"""Where the original promptimus had the LLM seam; it lives in `promptimus.protocols.llm`."""

from __future__ import annotations

from promptimus._lazy import deprecated_exports
from promptimus.protocols.llm import LLMProtocol

__all__ = ["LLMProtocol"]

# The original promptimus called this protocol `ProviderProtocol`.
__getattr__ = deprecated_exports(__name__, {"ProviderProtocol": "promptimus.llms.base.LLMProtocol"})
