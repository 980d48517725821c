"""Examples and datasets: loaders that name the bad line, seeded splits and batches."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
from bounded_call import bounded

from promptimus.errors import DatasetError, InvalidArgument
from promptimus.evals import DEFAULT_MAX_DATASET_BYTES, Dataset, Example


def records(n: int) -> list[dict[str, object]]:
    return [{"inputs": {"q": f"q{i}"}, "expected": f"a{i}", "id": i} for i in range(n)]


def test_example_keeps_inputs_expected_and_metadata() -> None:
    example = Example({"question": "2+2?"}, expected="4", source="math", id=7)
    assert example.inputs == {"question": "2+2?"}
    assert example.expected == "4"
    assert example.metadata == {"source": "math", "id": 7}
    assert example.to_dict() == {
        "inputs": {"question": "2+2?"},
        "expected": "4",
        "source": "math",
        "id": 7,
    }
    assert "source='math'" in repr(example)


@pytest.mark.parametrize("inputs", ["text", ["a"], {"not a name": 1}, {1: "x"}])
def test_example_refuses_inputs_that_are_not_keyword_arguments(inputs: object) -> None:
    with pytest.raises(DatasetError, match="module"):
        Example(inputs)  # type: ignore[arg-type]


def test_from_records_reads_expected_and_metadata() -> None:
    data = Dataset.from_records(records(3))
    assert len(data) == 3
    assert data[1] == Example({"q": "q1"}, "a1", id=1)
    assert isinstance(data[1:], Dataset) and len(data[1:]) == 2


@pytest.mark.parametrize(
    ("bad", "says"),
    [(["inputs"], "got list"), ({"expected": "x"}, 'no "inputs"'), ({"inputs": "x"}, "dict")],
)
def test_from_records_names_the_bad_record(bad: object, says: str) -> None:
    rows = [*records(2), bad]
    with pytest.raises(DatasetError, match=f"record 3: .*{says}") as info:
        Dataset.from_records(rows)
    assert info.value.line == 3


def test_from_jsonl_reads_rows_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records(2)) + "\n\n", encoding="utf-8")
    assert Dataset.from_jsonl(path) == Dataset.from_records(records(2))


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "expected an object"),
        ('{"expected": "x"}', 'no "inputs"'),
        ('{"inputs": {"q": 1}, "bad key": 1}', "metadata names"),
    ],
)
def test_from_jsonl_names_the_bad_line(tmp_path: Path, line: str, says: str) -> None:
    path = tmp_path / "data.jsonl"
    good = [json.dumps(r) for r in records(2)]
    path.write_text("\n".join([good[0], "", good[1], line]) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=f"line 4.*{says}") as info:
        Dataset.from_jsonl(path)
    assert info.value.line == 4
    assert str(path) in str(info.value)


def test_from_csv_maps_columns(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text('question,context,expected,id\n"What, exactly?",ctx,yes,1\nq2,c2,no,2\n')
    data = Dataset.from_csv(path, metadata=["id"])
    assert data[0] == Example({"question": "What, exactly?", "context": "ctx"}, "yes", id="1")
    only = Dataset.from_csv(path, inputs=["question"], expected=None)
    assert only[1] == Example({"question": "q2"})


def test_from_csv_names_the_bad_line_and_missing_columns(tmp_path: Path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("question,expected\nq1,a1\nq2,a2,extra\n")
    with pytest.raises(DatasetError, match="line 3: 3 fields, but the header has 2") as info:
        Dataset.from_csv(path)
    assert info.value.line == 3
    with pytest.raises(DatasetError, match=r"line 1: the header has no column \['answer'\]"):
        Dataset.from_csv(path, expected="answer")
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DatasetError, match="header"):
        Dataset.from_csv(tmp_path / "empty.csv")


def test_split_is_a_seeded_partition() -> None:
    data = Dataset.from_records(records(10))
    train, val, test = data.split(0.6, 0.2, 0.2, seed=3)
    assert [len(train), len(val), len(test)] == [6, 2, 2]
    ids = sorted(e.metadata["id"] for part in (train, val, test) for e in part)
    assert ids == list(range(10))  # every example in exactly one part
    assert data.split(0.6, 0.2, 0.2, seed=3) == (train, val, test)
    assert data.split(0.6, 0.2, 0.2, seed=4) != (train, val, test)
    first, rest = data.split(0.75, seed=0)  # the remainder becomes a last part
    assert (len(first), len(rest)) == (8, 2)  # 7.5 rounds down, the leftover goes first


@pytest.mark.parametrize("fractions", [(), (0.7, 0.7), (0.0, 1.0), (-0.5,)])
def test_split_refuses_bad_fractions(fractions: tuple[float, ...]) -> None:
    with pytest.raises(InvalidArgument):
        Dataset.from_records(records(4)).split(*fractions)


def test_batches_in_order_and_seeded_shuffle() -> None:
    data = Dataset.from_records(records(7))
    in_order = [[e.metadata["id"] for e in b] for b in data.batches(3)]
    assert in_order == [[0, 1, 2], [3, 4, 5], [6]]
    shuffled = [[e.metadata["id"] for e in b] for b in data.batches(3, shuffle=True, seed=1)]
    again = [[e.metadata["id"] for e in b] for b in data.batches(3, shuffle=True, seed=1)]
    other = [[e.metadata["id"] for e in b] for b in data.batches(3, shuffle=True, seed=2)]
    assert shuffled == again != other
    assert sorted(i for b in shuffled for i in b) == list(range(7))
    with pytest.raises(InvalidArgument):
        next(data.batches(0))


def test_sample_is_seeded_and_distinct() -> None:
    data = Dataset.from_records(records(10))
    picked = data.sample(4, seed=5)
    assert picked == data.sample(4, seed=5)
    assert len({e.metadata["id"] for e in picked}) == 4
    assert len(data.sample(50)) == 10


def test_dataset_refuses_non_examples() -> None:
    with pytest.raises(DatasetError, match="from_records"):
        Dataset([{"inputs": {}}])  # type: ignore[list-item]


def test_loaders_name_the_line_that_is_not_utf8(tmp_path: Path) -> None:
    good = json.dumps(records(1)[0]).encode()
    path = tmp_path / "data.jsonl"
    path.write_bytes(good + b"\n" + good + b"\n" + b'{"inputs": {"q": "\xff"}}\n')
    with pytest.raises(DatasetError, match="line 3 is not UTF-8") as info:
        Dataset.from_jsonl(path)
    assert info.value.line == 3
    csv_path = tmp_path / "data.csv"
    csv_path.write_bytes(b"q,expected\n" + b"a,b\n" * 3 + b"\xff,x\n")
    with pytest.raises(DatasetError, match="line 5 is not UTF-8") as info:
        Dataset.from_csv(csv_path)
    assert info.value.line == 5


# --- what a loader may read: regular files only, within a size limit ---------------------------


LOADERS = {"jsonl": Dataset.from_jsonl, "csv": Dataset.from_csv}


@pytest.mark.parametrize("kind", LOADERS)
def test_a_loader_refuses_a_fifo_without_blocking(tmp_path: Path, kind: str) -> None:
    fifo = tmp_path / f"data.{kind}"
    os.mkfifo(fifo)

    def unblock() -> None:  # a writer opening the FIFO lets a blocked reader see EOF
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    with pytest.raises(DatasetError, match="FIFO"):
        bounded(lambda: LOADERS[kind](fifo), on_timeout=unblock)


@pytest.mark.parametrize("kind", LOADERS)
def test_a_loader_refuses_a_device_instead_of_reading_it_forever(kind: str) -> None:
    with pytest.raises(DatasetError, match="device"):
        bounded(lambda: LOADERS[kind]("/dev/zero"))


@pytest.mark.parametrize("kind", LOADERS)
def test_a_missing_file_or_a_folder_is_a_dataset_error(tmp_path: Path, kind: str) -> None:
    with pytest.raises(DatasetError, match=r"missing\.\w+: no such file"):
        LOADERS[kind](tmp_path / f"missing.{kind}")
    with pytest.raises(DatasetError, match="folder"):
        LOADERS[kind](tmp_path)


@pytest.mark.parametrize("kind", LOADERS)
def test_a_file_over_the_size_limit_is_refused_naming_the_limit(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"data.{kind}"
    if kind == "csv":
        path.write_text("q,expected\n" + "a,b\n" * 50)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in records(50)))
    size = path.stat().st_size
    with pytest.raises(DatasetError, match=rf"{size} bytes.*limit of 100 bytes.*max_bytes"):
        LOADERS[kind](path, max_bytes=100)
    assert len(LOADERS[kind](path, max_bytes=size)) == 50
    assert DEFAULT_MAX_DATASET_BYTES >= 100 * 1024 * 1024
    with pytest.raises(InvalidArgument, match="max_bytes"):
        LOADERS[kind](path, max_bytes=float("nan"))  # type: ignore[arg-type]


def test_a_byte_order_mark_is_not_part_of_the_first_column_or_record(tmp_path: Path) -> None:
    csv_path = tmp_path / "sheet.csv"
    csv_path.write_bytes("\ufeffquestion,expected\r\n2+2?,4\r\n".encode())
    data = Dataset.from_csv(csv_path)
    assert data[0].inputs == {"question": "2+2?"} and data[0].expected == "4"
    jsonl_path = tmp_path / "data.jsonl"
    jsonl_path.write_bytes(b"\xef\xbb\xbf" + json.dumps(records(1)[0]).encode() + b"\n")
    assert Dataset.from_jsonl(jsonl_path)[0].expected == "a0"
