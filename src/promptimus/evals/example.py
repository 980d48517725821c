"""`Example`: one evaluation case — the module's keyword inputs, what it should give, and notes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import DatasetError, InvalidArgument


class Example:
    """`Example(inputs, expected=None, **metadata)`.

    `inputs` are the keyword arguments the module is called with (`await module(**inputs)`);
    `expected` is what a metric compares the output with (any value: text, a dict, a pydantic
    model, a list of acceptable answers...); every other keyword lands in `metadata` (an id, a
    category, a source) and travels into the evaluation's rows untouched.
    """

    __slots__ = ("expected", "inputs", "metadata")

    def __init__(self, inputs: Mapping[str, Any], expected: Any = None, **metadata: Any) -> None:
        if not isinstance(inputs, Mapping):
            raise DatasetError(
                f"Example inputs must be a dict of the module's keyword arguments, got "
                f"{type(inputs).__name__}: write Example({{'question': ...}}, expected=...)."
            )
        bad = [key for key in inputs if not isinstance(key, str) or not key.isidentifier()]
        if bad:
            raise DatasetError(
                f"Example input names must be keyword-argument names, got {bad!r}: the module "
                "is called as module(**inputs)."
            )
        self.inputs: dict[str, Any] = dict(inputs)
        self.expected = expected
        self.metadata: dict[str, Any] = metadata

    def to_dict(self) -> dict[str, Any]:
        """`{"inputs": ..., "expected": ..., **metadata}`, as `Dataset.from_records` reads it."""
        return {"inputs": dict(self.inputs), "expected": self.expected, **self.metadata}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Example):
            return NotImplemented
        return (self.inputs, self.expected, self.metadata) == (
            other.inputs,
            other.expected,
            other.metadata,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dict

    def __repr__(self) -> str:
        extra = "".join(f", {key}={value!r}" for key, value in self.metadata.items())
        return f"Example({self.inputs!r}, expected={self.expected!r}{extra})"


def example_list(examples: Any, name: str) -> list[Example]:
    """`examples` (a `Dataset` or any iterable of `Example`s) as a list; `InvalidArgument`
    naming the argument `name` for anything else (None, a number, a path, a dict)."""
    if isinstance(examples, str | bytes | Mapping) or not isinstance(examples, Iterable):
        raise InvalidArgument(
            f"{name} must be a Dataset or a list of Examples, got {type(examples).__name__}; "
            "load a file with Dataset.from_jsonl(path) or Dataset.from_csv(path)."
        )
    items = list(examples)
    bad = next((item for item in items if not isinstance(item, Example)), None)
    if bad is not None:
        raise InvalidArgument(
            f"{name} must hold Examples, got a {type(bad).__name__}; build them with "
            "Example(inputs, expected) or Dataset.from_records(...)."
        )
    return items
