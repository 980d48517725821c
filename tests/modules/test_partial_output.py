"""PartialReader fed a long reply piece by piece: how much it reads, counted, stays in
proportion to the reply (not its square), and the snapshots it hands out stay correct."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from promptimus.modules import partial_output
from promptimus.modules.partial_output import PartialReader


class Item(BaseModel):
    name: str
    qty: int


class Stock(BaseModel):
    items: list[Item]


def pieces(text: str, size: int) -> list[str]:
    return [text[start : start + size] for start in range(0, len(text), size)]


@pytest.fixture
def chars_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every text the reader parses (the real parser still does the work)."""
    read: list[int] = []
    parse = partial_output.from_json

    def counted(data: str, **options: Any) -> Any:
        read.append(len(data))
        return parse(data, **options)

    monkeypatch.setattr(partial_output, "from_json", counted)
    return read


def test_a_long_reply_is_read_in_proportion_to_its_length(chars_read: list[int]) -> None:
    stock = Stock(items=[Item(name=f"item number {i}", qty=i) for i in range(1000)])
    text = json.dumps(stock.model_dump())  # about 40 000 characters in 6-character pieces
    reader = PartialReader(Stock)
    snapshots = [s for s in map(reader.add, pieces(text, 6)) if s is not None]
    assert sum(chars_read) <= 64 * len(text)  # read at every piece it would be ~3 400 times
    counts = [len(s.items or []) for s in snapshots]  # type: ignore[attr-defined]
    assert counts == sorted(counts) and counts[-1] >= 950


def test_a_short_reply_is_read_at_every_piece(chars_read: list[int]) -> None:
    text = json.dumps(Stock(items=[Item(name="bolt", qty=3)]).model_dump())
    reader = PartialReader(Stock)
    last = [s for s in map(reader.add, pieces(text, 4)) if s is not None][-1]
    assert len(chars_read) == len(pieces(text, 4))
    assert last.model_dump() == {"items": [{"name": "bolt", "qty": 3}]}
