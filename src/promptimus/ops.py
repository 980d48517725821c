"""Small vector helpers in pure Python (no numpy), for single vectors and tests.

Stores do their bulk scoring with numpy; these are for the odd vector a user or a module holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from promptimus.errors import InvalidEmbedding

__all__ = ["cosine", "dot", "norm", "normalize"]

Vector = Sequence[float]


def _check_same_length(a: Vector, b: Vector) -> None:
    if len(a) != len(b):
        raise InvalidEmbedding(
            f"vectors have different lengths ({len(a)} and {len(b)}); embed both texts with the "
            "same embedder (and the same `dimensions`)."
        )


def dot(a: Vector, b: Vector) -> float:
    """The inner product of two vectors of the same length."""
    _check_same_length(a, b)
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def norm(a: Vector) -> float:
    """The Euclidean length of ``a``."""
    return math.sqrt(math.fsum(x * x for x in a))


def normalize(a: Vector) -> list[float]:
    """``a`` scaled to length 1; the zero vector stays the zero vector."""
    length = norm(a)
    if length == 0.0:
        return [0.0] * len(a)
    return [x / length for x in a]


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity in ``[-1, 1]``; ``0.0`` when either vector is all zeros (or empty).

    A vector holding NaN or infinity raises `InvalidEmbedding` (clamping NaN would report it as a
    perfect match).

    A zero vector has no direction, so it is treated as unrelated to everything rather than
    producing NaN, which would poison sorting.
    """
    _check_same_length(a, b)
    if not all(map(math.isfinite, a)) or not all(map(math.isfinite, b)):
        raise InvalidEmbedding(
            "cosine got a vector containing NaN or infinity; check the embedder that made it."
        )
    # Scale each vector by its largest magnitude first, so very large or very small components
    # neither overflow to inf (inf / inf is NaN) nor underflow to a false zero vector.
    scale_a = max(map(abs, a), default=0.0)
    scale_b = max(map(abs, b), default=0.0)
    if scale_a == 0.0 or scale_b == 0.0:
        return 0.0
    a = [x / scale_a for x in a]
    b = [x / scale_b for x in b]
    value = dot(a, b) / (norm(a) * norm(b))
    return max(-1.0, min(1.0, value))
