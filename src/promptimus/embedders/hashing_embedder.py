"""``HashingEmbedder``: an offline embedder by feature hashing — lexical, not semantic.

It needs no model, no key and no network, and is deterministic across processes, which makes it
the embedder for tests, demos and the README. Texts that share words (and word pieces) score
higher; synonyms and paraphrases without shared words do not. Use a real embedding model
(`OpenAILikeEmbedder`) when meaning matters.
"""

from __future__ import annotations

from promptimus.argument_checks import positive_int
from promptimus.embedders.hashing import DEFAULT_DIMENSIONS, hashed_embedding
from promptimus.errors import InvalidEmbeddingDimensions

__all__ = ["HashingEmbedder"]


class HashingEmbedder:
    """Embed text by hashing its words and character trigrams into ``dimensions`` buckets.

    Vectors are L2-normalised (empty text gives the zero vector). The same hashing is used by the
    fake server's ``/v1/embeddings``, so results match an `OpenAILikeEmbedder` pointed at it.
    """

    __slots__ = ("dimensions",)

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        self.dimensions = positive_int(
            dimensions, "HashingEmbedder dimensions", error=InvalidEmbeddingDimensions
        )

    @property
    def model_name(self) -> str:
        return f"hashing-{self.dimensions}"

    def embed(self, text: str) -> list[float]:
        return hashed_embedding(text, self.dimensions)

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        dimensions = self.dimensions
        return [hashed_embedding(text, dimensions) for text in texts]

    async def aembed(self, text: str) -> list[float]:
        return hashed_embedding(text, self.dimensions)

    async def aembed_batch(self, texts: list[str]) -> list[list[float]]:
        return self.embed_batch(texts)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self.dimensions})"
