"""A real lexical embedding by feature hashing: offline, deterministic, pure Python.

Features of a text:
- every word token (Unicode ``\\w+`` after case folding), weight 1.0;
- every character trigram of every word padded with ``#`` (``"cat"`` -> ``#ca``, ``cat``, ``at#``),
  weight 0.5, so that inflections and typos ("embedding" / "embeddings") still land close.

Each feature is hashed with BLAKE2b (stable across processes, unlike the salted built-in ``hash``)
to a bucket and a sign; signed weights are summed per bucket and the vector is L2-normalised.
Texts sharing words therefore get a higher cosine than unrelated texts. Empty text (or text
without any word character) maps to the all-zeros vector.
"""

from __future__ import annotations

import hashlib
import math
import re
from functools import lru_cache

from promptimus.argument_checks import positive_int
from promptimus.errors import InvalidEmbeddingDimensions

__all__ = ["DEFAULT_DIMENSIONS", "hashed_embedding", "tokenize"]

DEFAULT_DIMENSIONS = 256
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.5

_WORD = re.compile(r"\w+")
_SIGN_BIT = 1 << 63


def tokenize(text: str) -> list[str]:
    """Case-folded word tokens of ``text`` (Unicode ``\\w+`` runs), in order."""
    return _WORD.findall(text.casefold())


@lru_cache(maxsize=1 << 16)
def _feature_hash(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")


def _trigrams(word: str) -> list[str]:
    padded = f"#{word}#"
    return [padded[i : i + 3] for i in range(len(padded) - 2)]


def hashed_embedding(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """Embed ``text`` as an L2-normalised vector of ``dimensions`` floats (all zeros if empty)."""
    dimensions = positive_int(
        dimensions, "hashed_embedding dimensions", error=InvalidEmbeddingDimensions
    )
    vector = [0.0] * dimensions
    for word in tokenize(text):
        _add(vector, "w:" + word, WORD_WEIGHT, dimensions)
        for trigram in _trigrams(word):
            _add(vector, "c:" + trigram, TRIGRAM_WEIGHT, dimensions)
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0:
        return vector
    return [x / norm for x in vector]


def _add(vector: list[float], feature: str, weight: float, dimensions: int) -> None:
    h = _feature_hash(feature)
    vector[h % dimensions] += -weight if h & _SIGN_BIT else weight
