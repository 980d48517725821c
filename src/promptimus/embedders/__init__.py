"""Embedders behind ``EmbedderProtocol``: the OpenAI-compatible client and an offline lexical one.

Names are imported lazily so ``import promptimus.embedders`` does not import ``openai``.
``promptimus.embedders.base`` (`EmbedderProtocol`, `Embedding`) and ``promptimus.embedders.ops``
(``cosine`` and friends) are where the original promptimus had them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

if TYPE_CHECKING:
    from promptimus.embedders.hashing import hashed_embedding, tokenize
    from promptimus.embedders.hashing_embedder import HashingEmbedder
    from promptimus.embedders.openai import OpenAILikeEmbedder
    from promptimus.protocols import EmbedderProtocol, Embedding

_EXPORTS = {
    "EmbedderProtocol": "promptimus.protocols",
    "Embedding": "promptimus.protocols",
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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), submodules=("base", "ops"))
