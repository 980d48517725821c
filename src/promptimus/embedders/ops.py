"""Vector helpers where the original promptimus had them (``promptimus.embedders.ops.cosine``).

They live in `promptimus.ops` (pure Python, no numpy); this module re-exports them.
"""

from __future__ import annotations

from promptimus.ops import cosine, dot, norm, normalize

__all__ = ["cosine", "dot", "norm", "normalize"]
