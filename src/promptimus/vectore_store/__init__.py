"""Deprecated: promptimus 0.1's misspelling of `promptimus.vector_stores`; the names are served by
`promptimus.compat.vectore_store`. Importing this package warns once, at the importing line."""

from __future__ import annotations

from promptimus.compat.vectore_store import (
    BaseSearchResult,
    TextStoreProtocol,
    VectorStoreProtocol,
    warn_at_importer,
)

__all__ = ["BaseSearchResult", "TextStoreProtocol", "VectorStoreProtocol"]

warn_at_importer()
