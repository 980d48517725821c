"""Every count that configures a size or a limit goes through `promptimus.argument_checks`: NaN,
a fraction, a string or a bool is refused with a named error when the argument is given (before,
`nan < 1` being False let NaN through several of them, and a string failed with a TypeError)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from promptimus.argument_checks import non_negative_int, positive_int
from promptimus.embedders import HashingEmbedder, OpenAILikeEmbedder
from promptimus.embedders.hashing import hashed_embedding
from promptimus.errors import (
    InvalidArgument,
    InvalidEmbeddingDimensions,
    PromptimusError,
    ResponseCacheError,
)
from promptimus.evals import Dataset
from promptimus.evals.call_counter import CallCounter
from promptimus.llms import Claude
from promptimus.llms.memory_cache import MemoryCache
from promptimus.modules import LLMReranker, RetrievalModule
from promptimus.optim import FewShot, Reflective
from promptimus.rerankers.rrf import reciprocal_rank_fusion
from promptimus.transport import ConcurrencyLimit

NAN = math.nan
ROWS = [{"inputs": {"q": 1}}]

CASES: list[tuple[str, Callable[[Any], object], type[PromptimusError], str]] = [
    ("HashingEmbedder", HashingEmbedder, InvalidEmbeddingDimensions, "dimensions"),
    ("hashed_embedding", lambda v: hashed_embedding("x", v), InvalidEmbeddingDimensions, "dim"),
    ("batch_size", lambda v: OpenAILikeEmbedder("e", batch_size=v), InvalidArgument, "batch_size"),
    ("dimensions", lambda v: OpenAILikeEmbedder("e", dimensions=v), InvalidArgument, "dimensions"),
    ("ConcurrencyLimit", ConcurrencyLimit, InvalidArgument, "max_concurrency"),
    ("MemoryCache", MemoryCache, ResponseCacheError, "max_entries"),
    ("LLMReranker", lambda v: LLMReranker(max_chars=v), InvalidArgument, "max_chars"),
    ("FewShot", FewShot, InvalidArgument, "FewShot k"),
    ("Reflective", lambda v: Reflective(propose=str, minibatch_size=v), InvalidArgument, "mini"),
    ("RetrievalModule", lambda v: RetrievalModule(n_text=v), InvalidArgument, "n_text"),
    ("Claude", lambda v: Claude("c", n_retries=v), InvalidArgument, "n_retries"),
    ("batches", lambda v: next(Dataset.from_records(ROWS).batches(v)), InvalidArgument, "batch"),
    ("CallCounter", CallCounter, InvalidArgument, "max_calls"),
    ("top_n", lambda v: reciprocal_rank_fusion([], top_n=v), InvalidArgument, "top_n"),
]


@pytest.mark.parametrize("bad", [NAN, 2.5, "3", True, -1])
@pytest.mark.parametrize(("label", "build", "error", "named"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_count_is_refused_with_a_named_error(
    label: str,
    build: Callable[[Any], object],
    error: type[PromptimusError],
    named: str,
    bad: object,
) -> None:
    with pytest.raises(error, match=named):
        build(bad)


def test_the_checks_return_plain_ints_and_name_the_bound() -> None:
    numpy = pytest.importorskip("numpy")
    assert type(positive_int(numpy.int64(3), "n")) is int
    assert non_negative_int(0, "n") == 0
    with pytest.raises(InvalidArgument, match=r"n must be an int >= 1, got 0\."):
        positive_int(0, "n")
    with pytest.raises(ResponseCacheError, match=r">= 0"):
        non_negative_int(-2, "n", error=ResponseCacheError)
