"""`Dataset`: an ordered, immutable sequence of `Example`s, with loaders, splits and batches.

    data = Dataset.from_jsonl("qa.jsonl")           # {"inputs": {...}, "expected": ..., ...}
    train, val, test = data.split(0.6, 0.2, 0.2, seed=0)
    for batch in train.batches(4, shuffle=True, seed=1): ...

Every loader checks every row before returning, and a bad row raises `DatasetError` naming its
line (JSONL, CSV) or record number (`from_records`), counted from 1.

The file loaders read like checkpoint loading does: regular files only (a FIFO, a device such as
`/dev/zero`, a socket or a folder is refused without being read, so nothing blocks or fills
memory), at most `max_bytes` of them (`DEFAULT_MAX_DATASET_BYTES` unless raised), and a UTF-8
byte order mark, as spreadsheets write it, is not part of the first line.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import math
import os
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from ..argument_checks import non_negative_int, positive_int
from ..checkpoint.files import read_regular_file
from ..errors import DatasetError, FileRefused, FileTooLarge, InvalidArgument
from .example import Example

__all__ = ["DEFAULT_MAX_DATASET_BYTES", "Dataset"]

DEFAULT_MAX_DATASET_BYTES = 256 * 1024 * 1024
"""The largest dataset file `Dataset.from_jsonl` / `from_csv` read unless given `max_bytes`."""


def _read_dataset_file(path: str | os.PathLike[str], max_bytes: int | None) -> bytes:
    """The bytes of a dataset file (without a UTF-8 byte order mark); `DatasetError` for a
    file that is missing, unreadable, not a regular file or larger than `max_bytes`."""
    where = os.fspath(path)
    limit = None if max_bytes is None else positive_int(max_bytes, "max_bytes (or None)")
    try:
        content = read_regular_file(Path(where), limit)
    except FileTooLarge as exc:
        raise DatasetError(
            f"Cannot read dataset {where}: it {exc.reason}; pass a larger max_bytes (or "
            "max_bytes=None) to read it."
        ) from None
    except FileRefused as exc:
        raise DatasetError(f"Cannot read dataset {where}: it {exc.reason}.") from None
    except FileNotFoundError:
        raise DatasetError(f"{where}: no such file. Check the dataset's path.") from None
    except OSError as exc:
        raise DatasetError(f"Cannot read dataset {where}: {exc.strerror or exc}.") from None
    return content.removeprefix(codecs.BOM_UTF8)


def _example_from_record(record: Any, where: str, line: int) -> Example:
    if isinstance(record, Example):
        return record
    if not isinstance(record, Mapping):
        raise DatasetError(
            f'{where}: expected an object like {{"inputs": {{...}}, "expected": ...}}, got '
            f"{type(record).__name__}.",
            line=line,
        )
    if "inputs" not in record:
        raise DatasetError(
            f'{where}: the row has no "inputs" (it has {sorted(map(str, record))!r}); every '
            'row needs "inputs": the module\'s keyword arguments as an object.',
            line=line,
        )
    fields = dict(record)
    inputs = fields.pop("inputs")
    expected = fields.pop("expected", None)
    bad = [key for key in fields if not isinstance(key, str) or not key.isidentifier()]
    if bad:
        raise DatasetError(f"{where}: metadata names must be identifiers, got {bad!r}.", line=line)
    try:
        return Example(inputs, expected, **fields)
    except DatasetError as exc:
        raise DatasetError(f"{where}: {exc}", line=line) from None


class Dataset(Sequence[Example]):
    """A sequence of `Example`s. Indexing with a slice, `split` and `batches` give Datasets."""

    __slots__ = ("_examples",)

    def __init__(self, examples: Iterable[Example] = ()) -> None:
        items = tuple(examples)
        for index, item in enumerate(items):
            if not isinstance(item, Example):
                raise DatasetError(
                    f"Dataset item {index} is a {type(item).__name__}, not an Example; build "
                    "datasets from records with Dataset.from_records(...).",
                    line=index + 1,
                )
        self._examples = items

    # --- loaders --------------------------------------------------------------------------------

    @classmethod
    def from_records(cls, records: Iterable[Any]) -> Dataset:
        """From dicts `{"inputs": {...}, "expected": ..., **metadata}` (or `Example`s)."""
        return cls(
            _example_from_record(record, f"record {number}", number)
            for number, record in enumerate(records, start=1)
        )

    @classmethod
    def from_jsonl(
        cls,
        path: str | os.PathLike[str],
        *,
        max_bytes: int | None = DEFAULT_MAX_DATASET_BYTES,
    ) -> Dataset:
        """One JSON object per line, like `from_records`; blank lines are skipped. Reads a
        regular file of at most `max_bytes` (None: no limit; see the module docstring)."""
        examples = []
        with io.BytesIO(_read_dataset_file(path, max_bytes)) as file:
            for number, raw in enumerate(file, start=1):
                where = f"{os.fspath(path)} line {number}"
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DatasetError(f"{where} is not UTF-8 ({exc}).", line=number) from None
                if not text.strip():
                    continue
                try:
                    record = json.loads(text)
                except (json.JSONDecodeError, RecursionError, ValueError) as exc:
                    raise DatasetError(f"{where} is not valid JSON ({exc}).", line=number) from None
                examples.append(_example_from_record(record, where, number))
        return cls(examples)

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        *,
        inputs: Sequence[str] | None = None,
        expected: str | None = "expected",
        metadata: Sequence[str] = (),
        max_bytes: int | None = DEFAULT_MAX_DATASET_BYTES,
    ) -> Dataset:
        """One example per row of a CSV file with a header. `inputs` names the input columns
        (default: every column that is not `expected` or in `metadata`); `expected` names the
        expected column (None: no expected values). Values are strings, as CSV stores them.
        Reads a regular file of at most `max_bytes` (None: no limit; see the module docstring)."""
        where_file = os.fspath(path)
        content = _read_dataset_file(path, max_bytes)
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            number = content[: exc.start].count(b"\n") + 1
            raise DatasetError(
                f"{where_file} line {number} is not UTF-8 ({exc}).", line=number
            ) from None
        with io.StringIO(text, newline="") as file:
            reader = csv.reader(file)
            try:
                header = next(reader)
            except StopIteration:
                raise DatasetError(f"{where_file} is empty: it needs a header row.") from None
            except csv.Error as exc:
                raise DatasetError(f"{where_file} line 1: {exc}.", line=1) from None
            wanted = [*(inputs or ()), *([expected] if expected else []), *metadata]
            missing = [name for name in wanted if name not in header]
            if missing:
                raise DatasetError(
                    f"{where_file} line 1: the header has no column {missing!r} (it has "
                    f"{header!r}).",
                    line=1,
                )
            if len(set(header)) != len(header):
                raise DatasetError(
                    f"{where_file} line 1: the header repeats a column name.", line=1
                )
            input_names = (
                list(inputs)
                if inputs is not None
                else [name for name in header if name != expected and name not in metadata]
            )
            examples = []
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    break
                except csv.Error as exc:
                    number = reader.line_num
                    raise DatasetError(f"{where_file} line {number}: {exc}.", line=number) from None
                number = reader.line_num
                if not row:
                    continue
                if len(row) != len(header):
                    raise DatasetError(
                        f"{where_file} line {number}: {len(row)} fields, but the header has "
                        f"{len(header)}.",
                        line=number,
                    )
                values = dict(zip(header, row, strict=True))
                examples.append(
                    _example_from_record(
                        {
                            "inputs": {name: values[name] for name in input_names},
                            "expected": values[expected] if expected else None,
                            **{name: values[name] for name in metadata},
                        },
                        f"{where_file} line {number}",
                        number,
                    )
                )
        return cls(examples)

    # --- sequence -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._examples)

    @overload
    def __getitem__(self, index: int) -> Example: ...

    @overload
    def __getitem__(self, index: slice) -> Dataset: ...

    def __getitem__(self, index: int | slice) -> Example | Dataset:
        if isinstance(index, slice):
            return Dataset(self._examples[index])
        return self._examples[index]

    def __iter__(self) -> Iterator[Example]:
        return iter(self._examples)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dataset):
            return NotImplemented
        return self._examples == other._examples

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Dataset) -> Dataset:
        if not isinstance(other, Dataset):
            return NotImplemented
        return Dataset((*self._examples, *other._examples))

    def __repr__(self) -> str:
        return f"Dataset({len(self)} examples)"

    # --- splitting ------------------------------------------------------------------------------

    def shuffled(self, seed: int = 0) -> Dataset:
        """The same examples in an order fixed by `seed`."""
        order = list(self._examples)
        random.Random(seed).shuffle(order)
        return Dataset(order)

    def split(self, *fractions: float, seed: int = 0) -> tuple[Dataset, ...]:
        """Shuffle with `seed`, then cut into parts of these fractions of the examples.

        Fractions must be positive and sum to at most 1; when they sum to less, one more part
        holds the rest (`train, rest = data.split(0.8)`). Part sizes are rounded down and the
        examples left over go one each to the first parts, so every example lands in exactly one
        part, and the same seed gives the same parts."""
        if not fractions:
            raise InvalidArgument("split needs at least one fraction, e.g. split(0.8, 0.2).")
        if any(not isinstance(f, int | float) or not 0 < f <= 1 for f in fractions):
            raise InvalidArgument(f"split fractions must be in (0, 1], got {fractions!r}.")
        total = math.fsum(fractions)
        if total > 1 + 1e-9:
            raise InvalidArgument(f"split fractions sum to {total:g}, more than 1.")
        parts = list(fractions)
        if total < 1 - 1e-9:
            parts.append(1 - total)
        n = len(self)
        sizes = [math.floor(n * f + 1e-9) for f in parts]
        for index in range(n - sum(sizes)):
            sizes[index % len(sizes)] += 1
        order = self.shuffled(seed)._examples
        out, start = [], 0
        for size in sizes:
            out.append(Dataset(order[start : start + size]))
            start += size
        return tuple(out)

    def batches(self, n: int, *, shuffle: bool = False, seed: int = 0) -> Iterator[Dataset]:
        """Consecutive batches of `n` examples (the last may be smaller), in order or shuffled
        with `seed` (the same seed gives the same batches)."""
        n = positive_int(n, "batch size")
        order = self.shuffled(seed)._examples if shuffle else self._examples
        for start in range(0, len(order), n):
            yield Dataset(order[start : start + n])

    def sample(self, k: int, *, seed: int = 0) -> Dataset:
        """`k` distinct examples drawn with `seed` (all of them, shuffled, when k >= len)."""
        k = non_negative_int(k, "sample size")
        return Dataset(random.Random(seed).sample(self._examples, min(k, len(self))))
