"""Where the original promptimus had the embedder seam; it lives in
`promptimus.protocols.embedder`."""

from __future__ import annotations

from promptimus.protocols.embedder import EmbedderProtocol, Embedding

__all__ = ["EmbedderProtocol", "Embedding"]
