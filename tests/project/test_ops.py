"""ops: pure-Python vector helpers, including the zero-vector cases."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from promptimus.errors import InvalidEmbedding
from promptimus.ops import cosine, dot, norm, normalize


def test_cosine_of_known_pairs() -> None:
    assert cosine([1.0, 0.0], [2.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [-3.0, 0.0]) == pytest.approx(-1.0)
    assert cosine([1.0, 0.0], [0.0, 5.0]) == pytest.approx(0.0)
    assert cosine([1.0, 1.0], [1.0, 0.0]) == pytest.approx(1 / math.sqrt(2))


@pytest.mark.parametrize(
    ("a", "b"), [([0.0, 0.0], [1.0, 2.0]), ([1.0, 2.0], [0.0, 0.0]), ([0.0], [0.0]), ([], [])]
)
def test_cosine_with_a_zero_vector_is_zero_not_nan(a: list[float], b: list[float]) -> None:
    value = cosine(a, b)
    assert value == 0.0 and not math.isnan(value)


def test_cosine_stays_in_range_for_nearly_parallel_vectors() -> None:
    v = [0.1] * 1000
    assert -1.0 <= cosine(v, v) <= 1.0


def test_length_mismatch_is_an_error() -> None:
    with pytest.raises(InvalidEmbedding, match="same embedder"):
        cosine([1.0, 2.0], [1.0, 2.0, 3.0])


def test_dot_norm_normalize() -> None:
    assert dot([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == 32.0
    assert norm([3.0, 4.0]) == 5.0
    assert normalize([3.0, 4.0]) == pytest.approx([0.6, 0.8])
    assert normalize([0.0, 0.0]) == [0.0, 0.0]


def test_importing_stores_and_embedders_pulls_in_no_heavy_library() -> None:
    code = (
        "import sys, promptimus, promptimus.ops, promptimus.vector_stores, promptimus.embedders\n"
        "from promptimus.vector_stores import SearchHit, VectorStoreProtocol\n"
        "from promptimus.embedders import EmbedderProtocol\n"
        "heavy = [m for m in ('numpy', 'openai', 'chromadb', 'httpx') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
