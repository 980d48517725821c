"""Embedders behind ``EmbedderProtocol``: the OpenAI-compatible client and an offline lexical one.

Names are imported lazily so ``import promptimus.embedders`` does not import ``openai``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from promptimus.embedders.base import EmbedderProtocol, Embedding
    from promptimus.embedders.hashing import hashed_embedding, tokenize
    from promptimus.embedders.hashing_embedder import HashingEmbedder
    from promptimus.embedders.openai import OpenAILikeEmbedder

_EXPORTS = {
    "EmbedderProtocol": "base",
    "Embedding": "base",
    "HashingEmbedder": "hashing_embedder",
    "OpenAILikeEmbedder": "openai",
    "hashed_embedding": "hashing",
    "tokenize": "hashing",
}

__all__ = [
    "EmbedderProtocol",
    "Embedding",
    "HashingEmbedder",
    "OpenAILikeEmbedder",
    "hashed_embedding",
    "tokenize",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'promptimus.embedders' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"promptimus.embedders.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return [*globals(), *__all__]
