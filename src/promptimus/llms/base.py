"""The path promptimus 0.1 had the LLM seam at; it lives in `promptimus.protocols.llm`."""

from __future__ import annotations

from promptimus._compat_seam import compat_names
from promptimus.protocols.llm import LLMProtocol

__all__ = ["LLMProtocol"]

__getattr__ = compat_names(__name__)
