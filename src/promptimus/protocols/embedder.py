"""The embedder seam: anything with a model name that turns text into vectors."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["EmbedderProtocol", "Embedding"]

Embedding = list[float]


@runtime_checkable
class EmbedderProtocol(Protocol):
    """Turns text into embedding vectors.

    ``aembed_batch`` returns one vector per input text, in the order given; every vector of one
    embedder has the same length.
    """

    @property
    def model_name(self) -> str: ...

    async def aembed(self, text: str) -> Embedding: ...

    async def aembed_batch(self, texts: list[str]) -> list[Embedding]: ...
