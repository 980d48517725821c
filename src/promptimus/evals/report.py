"""`EvalRow` and `EvalReport`: what `evaluate` found, per example and in total."""

from __future__ import annotations

import html
import json
import os
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from .batch_summary import BatchSummary
from .example import Example
from .output_text import output_text
from .run_trace import RunTrace
from .usage_collector import UsageTotals

__all__ = ["EvalReport", "EvalRow"]

_CELL = 48
_SHOWN_ROWS = 20


@dataclass
class EvalRow:
    """One example's result. `output` is what the module returned (None when it raised);
    `error` is the exception as `"Type: message"` when the module or the metric raised (the
    score is then 0); `latency` is the module call's seconds; `usage` its LLM requests and
    tokens (the metric's own calls, e.g. an LLMJudge's, are in `EvalReport.metric_usage`);
    `trace` the module calls of its run (`RunTrace`: each call's path, inputs and output)."""

    example: Example
    output: Any
    score: float
    feedback: str = ""
    error: str | None = None
    latency: float = 0.0
    usage: UsageTotals = field(default_factory=UsageTotals)
    trace: RunTrace | None = None

    @property
    def inputs(self) -> dict[str, Any]:
        return self.example.inputs

    @property
    def expected(self) -> Any:
        return self.example.expected

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-ready data (what `EvalReport.to_jsonl` writes, one per line)."""
        return {
            "inputs": _jsonable(self.inputs),
            "expected": _jsonable(self.expected),
            "output": _jsonable(self.output),
            "score": self.score,
            "feedback": self.feedback,
            "error": self.error,
            "latency": self.latency,
            "usage": self.usage.to_dict(),
            "metadata": _jsonable(self.example.metadata),
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


def _cell(value: Any) -> str:
    text = " ".join(output_text(value).split())
    return text if len(text) <= _CELL else text[: _CELL - 1] + "…"


def _inputs_cell(inputs: dict[str, Any]) -> str:
    if len(inputs) == 1:
        return _cell(next(iter(inputs.values())))
    return _cell(", ".join(f"{key}={output_text(value)}" for key, value in inputs.items()))


class EvalReport:
    """The result of `evaluate`: `rows` in dataset order, `score` (their mean), `scores`,
    `usage` (the module's LLM requests and tokens), `metric_usage` (the metric's, e.g. an
    LLMJudge), `errors` (rows whose module or metric raised), `batch` (a batch evaluation's
    `BatchSummary`: batches, rounds, price; None otherwise). `repr` is its one-line summary,
    `str` (what `print` shows) adds a table of the first rows; notebooks show it as HTML."""

    def __init__(self, rows: list[EvalRow], metric_usage: UsageTotals | None = None) -> None:
        self.rows = rows
        self.metric_usage = metric_usage or UsageTotals()
        self.batch: BatchSummary | None = None

    @property
    def scores(self) -> list[float]:
        """Per-example scores in row (dataset) order."""
        return [row.score for row in self.rows]

    @property
    def score(self) -> float:
        """The mean score (0.0 for no rows)."""
        return sum(self.scores) / len(self.rows) if self.rows else 0.0

    @property
    def usage(self) -> UsageTotals:
        total = UsageTotals()
        for row in self.rows:
            total = total + row.usage
        return total

    @property
    def errors(self) -> list[EvalRow]:
        return [row for row in self.rows if row.error is not None]

    def __len__(self) -> int:
        return len(self.rows)

    def to_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write one JSON object per row (`EvalRow.to_dict`)."""
        with open(path, "w", encoding="utf-8") as file:
            for row in self.rows:
                file.write(json.dumps(row.to_dict(), ensure_ascii=False) + "\n")

    # --- display --------------------------------------------------------------------------------

    def summary(self) -> str:
        usage = self.usage
        errors = len(self.errors)
        text = (
            f"EvalReport: score {self.score:.3f} over {len(self.rows)} example"
            f"{'' if len(self.rows) == 1 else 's'}"
        )
        if errors:
            text += f", {errors} error{'' if errors == 1 else 's'}"
        text += f"; {usage.requests} requests, {usage.total_tokens} tokens"
        if self.metric_usage.requests:
            text += f" (+ metric: {self.metric_usage.requests} requests, "
            text += f"{self.metric_usage.total_tokens} tokens)"
        if self.batch is not None:
            text += f"; {self.batch}"
        return text

    def _table(self) -> tuple[list[str], list[list[str]]]:
        header = ["#", "score", "inputs", "expected", "output", "feedback / error"]
        body = [
            [
                str(index),
                f"{row.score:.3f}",
                _inputs_cell(row.inputs),
                _cell(row.expected),
                _cell(row.output),
                _cell(f"ERROR {row.error}" if row.error is not None else row.feedback),
            ]
            for index, row in enumerate(self.rows[:_SHOWN_ROWS])
        ]
        return header, body

    def __repr__(self) -> str:
        return f"<{self.summary()}>"

    def __str__(self) -> str:
        header, body = self._table()
        widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
        lines = [self.summary()]
        for line in [header, *body]:
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)))
        if len(self.rows) > _SHOWN_ROWS:
            lines.append(f"… {len(self.rows) - _SHOWN_ROWS} more rows")
        return "\n".join(line.rstrip() for line in lines)

    def _repr_html_(self) -> str:
        header, body = self._table()
        head = "".join(f"<th>{html.escape(cell)}</th>" for cell in header)
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in line) + "</tr>"
            for line in body
        )
        more = (
            f"<p>… {len(self.rows) - _SHOWN_ROWS} more rows</p>"
            if len(self.rows) > _SHOWN_ROWS
            else ""
        )
        return (
            f"<div><p><b>{html.escape(self.summary())}</b></p>"
            f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{more}</div>"
        )
