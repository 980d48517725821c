"""Chroma vector store for promptimus: ``from chromadb_store import ChromaVectorStore``.

``chromadb`` itself is imported by the caller (to build a client), not by this package.
"""

from chromadb_store.store import ChromaVectorStore, Space, to_chroma_where

__all__ = ["ChromaVectorStore", "Space", "to_chroma_where"]
