"""The provider seams: what an LLM, an embedder, a vector store and a reranker must offer.

The bottom tier, beside `promptimus.dto` and `promptimus.errors`: the core types its providers
with these Protocols and imports no provider package. One Protocol per submodule
(`protocols.llm`, `protocols.embedder`, `protocols.vector_store`, `protocols.reranker`,
`protocols.session_store`); a provider is anything that satisfies its Protocol.
"""

from .embedder import EmbedderProtocol, Embedding
from .llm import LLMProtocol
from .reranker import FusionProtocol, RerankerProtocol
from .session_store import SessionStore, StoredTurn
from .vector_store import Metadata, VectorStoreProtocol, Where

__all__ = [
    "EmbedderProtocol",
    "Embedding",
    "FusionProtocol",
    "LLMProtocol",
    "Metadata",
    "RerankerProtocol",
    "SessionStore",
    "StoredTurn",
    "VectorStoreProtocol",
    "Where",
]
