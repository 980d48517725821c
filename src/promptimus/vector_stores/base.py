"""The shared metadata filter of every vector store; `SearchHit` (`promptimus.dto`) and
`VectorStoreProtocol` (`promptimus.protocols`) are re-exported here, where they were first.

Score convention, the same for every store: **higher is better**. In a cosine space the score is
the cosine similarity in ``[-1, 1]``; other spaces document their own monotone mapping.

Metadata filters (``where``) use the subset of Chroma's syntax every store understands:

- ``{"key": value}`` — equality (several keys in one dict are ANDed);
- ``{"key": {"$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte": value}}``;
- ``{"key": {"$in" | "$nin": [value, ...]}}``;
- ``{"$and": [where, ...]}`` and ``{"$or": [where, ...]}``, nested freely.

Values are ``str``, ``int``, ``float`` or ``bool``; ``$gt``/``$gte``/``$lt``/``$lte`` take numbers.
A document whose metadata lacks the key fails every condition on it except ``$ne`` and ``$nin``,
which it passes (as in Chroma). ``True`` never equals ``1``: booleans and numbers are different
types; ``1`` equals ``1.0``. Ints fit in 64 bits, floats are finite, keys follow the metadata
rules of `promptimus.vector_stores.checks` (``#...`` and ``chroma:...`` are reserved, so a filter
never reaches Chroma's own document field). ``$and``/``$or`` nest at most `MAX_FILTER_DEPTH` (20)
levels deep, which every store can evaluate (Chroma refuses a little over 60). Anything else raises
`InvalidFilter` before the store is touched.

`check_insert` and `check_query` are the argument checks every store makes (see ``checks``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any, TypeGuard

from promptimus.argument_checks import non_negative_int
from promptimus.dto.search_hit import Metadata, SearchHit
from promptimus.errors import InvalidFilter
from promptimus.protocols.vector_store import VectorStoreProtocol, Where
from promptimus.vector_stores.checks import (
    check_embedding,
    check_insert,
    check_metadata,
    reserved_key_reason,
    scalar_problem,
)

__all__ = [
    "COMPARISON_OPERATORS",
    "LOGICAL_OPERATORS",
    "MAX_FILTER_DEPTH",
    "Metadata",
    "SearchHit",
    "VectorStoreProtocol",
    "Where",
    "check_embedding",
    "check_insert",
    "check_metadata",
    "check_n_results",
    "check_query",
    "compile_where",
    "validate_where",
]

LOGICAL_OPERATORS = frozenset({"$and", "$or"})
COMPARISON_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"})
#: How deep ``$and``/``$or`` may nest: deeper filters raise `InvalidFilter` (never RecursionError).
MAX_FILTER_DEPTH = 20
_ORDERING = {"$gt": operator.gt, "$gte": operator.ge, "$lt": operator.lt, "$lte": operator.le}


# --- filters -------------------------------------------------------------------------------------

Predicate = Callable[[Mapping[str, Any]], bool]


def check_query(
    embedding: Any, n_results: Any, where: Where | None, dimensions: int | None = None
) -> Predicate | None:
    """The argument checks every store's ``search`` makes before touching its data: one usable
    query vector (of length ``dimensions`` once the store has one), ``n_results`` an int >= 0,
    a valid filter. Returns the compiled filter (``None`` without one)."""
    check_n_results(n_results)
    predicate = compile_where(where)
    check_embedding(embedding, dimensions)
    return predicate


def check_n_results(n_results: Any) -> None:
    """Raise `InvalidArgument` unless ``n_results`` is an int >= 0."""
    non_negative_int(n_results, "n_results")


def validate_where(where: Where | None) -> None:
    """Raise `InvalidFilter` unless ``where`` is ``None`` or a filter this module describes."""
    compile_where(where)


def compile_where(where: Where | None) -> Predicate | None:
    """Validate ``where`` and turn it into a predicate over a metadata dict (``None`` if no filter).

    Compiling once and calling the predicate per document keeps filtering cheap.
    """
    if where is None:
        return None
    _check_depth(where)
    return _compile(where, "where")


def _check_depth(where: Any) -> None:
    # Iterative, so a filter nested thousands of levels deep (or one that contains itself) is
    # refused with a named error instead of exhausting the interpreter's stack.
    stack: list[tuple[Any, int]] = [(where, 0)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, Mapping):
            continue
        for key, value in node.items():
            if key in LOGICAL_OPERATORS and isinstance(value, list):
                if depth + 1 > MAX_FILTER_DEPTH:
                    raise InvalidFilter(
                        f"the filter nests '$and'/'$or' more than {MAX_FILTER_DEPTH} levels deep; "
                        "flatten it: '$and' and '$or' take any number of conditions in one list."
                    )
                stack.extend((item, depth + 1) for item in value)


def _compile(where: Any, path: str) -> Predicate:
    if not isinstance(where, Mapping):
        raise InvalidFilter(
            f"{path} must be a dict such as {{'lang': 'en'}}, got {type(where).__name__}."
        )
    if not where:
        raise InvalidFilter(f"{path} is an empty dict; pass where=None to search without a filter.")
    parts = [_compile_entry(key, value, path) for key, value in where.items()]
    if len(parts) == 1:
        return parts[0]
    return lambda metadata: all(part(metadata) for part in parts)


def _compile_entry(key: Any, value: Any, path: str) -> Predicate:
    if not isinstance(key, str):
        raise InvalidFilter(f"{path} has a non-string key {key!r}; metadata keys are strings.")
    if key in LOGICAL_OPERATORS:
        if not isinstance(value, list) or not value:
            raise InvalidFilter(
                f"{path}[{key!r}] must be a non-empty list of filters, e.g. "
                f"{{{key!r}: [{{'a': 1}}, {{'b': 2}}]}}."
            )
        parts = [_compile(item, f"{path}[{key!r}][{i}]") for i, item in enumerate(value)]
        if key == "$and":
            return lambda metadata: all(part(metadata) for part in parts)
        return lambda metadata: any(part(metadata) for part in parts)
    if key.startswith("$"):
        raise InvalidFilter(
            f"{path} uses unknown logical operator {key!r}; use '$and' or '$or', "
            "or put comparison operators under a metadata key: {'year': {'$gt': 2020}}."
        )
    reason = reserved_key_reason(key)
    if reason is not None:
        raise InvalidFilter(f"{path} cannot filter on {key!r}: {reason}.")
    if isinstance(value, Mapping):
        return _compile_condition(key, value, f"{path}[{key!r}]")
    _check_scalar(value, f"{path}[{key!r}]")
    return _equals(key, value)


def _compile_condition(key: str, condition: Mapping[str, Any], path: str) -> Predicate:
    if len(condition) != 1:
        raise InvalidFilter(
            f"{path} must hold exactly one operator, got {sorted(condition)!r}; combine several "
            "with '$and': {'$and': [{'year': {'$gt': 2000}}, {'year': {'$lt': 2010}}]}."
        )
    ((op, operand),) = condition.items()
    if op not in COMPARISON_OPERATORS:
        raise InvalidFilter(
            f"{path} uses unknown operator {op!r}; "
            f"supported: {', '.join(sorted(COMPARISON_OPERATORS))}."
        )
    if op == "$eq":
        _check_scalar(operand, f"{path}[{op!r}]")
        return _equals(key, operand)
    if op == "$ne":
        _check_scalar(operand, f"{path}[{op!r}]")
        return _not_equals(key, operand)
    if op in ("$in", "$nin"):
        if not isinstance(operand, list) or not operand:
            raise InvalidFilter(f"{path}[{op!r}] must be a non-empty list of values.")
        for i, item in enumerate(operand):
            _check_scalar(item, f"{path}[{op!r}][{i}]")
        members = [_normalise(item) for item in operand]
        if op == "$in":
            return lambda metadata: key in metadata and _normalise(metadata[key]) in members
        return lambda metadata: key not in metadata or _normalise(metadata[key]) not in members
    if not _is_number(operand) or scalar_problem(operand) is not None:
        raise InvalidFilter(
            f"{path}[{op!r}] compares numbers, got {operand!r}; "
            "use $eq or $in for strings and booleans."
        )
    compare = _ORDERING[op]
    return lambda metadata: _is_number(got := metadata.get(key)) and compare(got, operand)


def _check_scalar(value: Any, path: str) -> None:
    problem = scalar_problem(value)
    if problem is not None:
        raise InvalidFilter(f"{path} is not a usable value: {problem}.")


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _normalise(value: Any) -> tuple[bool, Any]:
    # Keeps True from equalling 1: booleans and numbers are different metadata types.
    return (isinstance(value, bool), value)


def _equals(key: str, value: Any) -> Predicate:
    wanted = _normalise(value)
    return lambda metadata: key in metadata and _normalise(metadata[key]) == wanted


def _not_equals(key: str, value: Any) -> Predicate:
    unwanted = _normalise(value)
    return lambda metadata: key not in metadata or _normalise(metadata[key]) != unwanted
