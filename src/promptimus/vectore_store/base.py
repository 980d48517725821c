"""Deprecated: ``promptimus.vectore_store.base`` of promptimus 0.1; see `promptimus.vectore_store`.

Importing it imports the package, which emits the one deprecation warning.
"""

from __future__ import annotations

from promptimus.vectore_store import BaseSearchResult, TextStoreProtocol, VectorStoreProtocol

__all__ = ["BaseSearchResult", "TextStoreProtocol", "VectorStoreProtocol"]
