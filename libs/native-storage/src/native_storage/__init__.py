"""promptimus 0.1's in-process store: ``from native_storage import MemoryStore``.

numpy is imported when the first vector arrives, not by this import.
"""

from native_storage.memory_store import MemoryStore

__all__ = ["MemoryStore"]
