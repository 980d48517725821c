"""Evaluation: run a module over a dataset, score every output, and report.

    from promptimus.evals import Dataset, evaluate, exact_match

    data = Dataset.from_jsonl("qa.jsonl")
    report = await evaluate(agent, data, exact_match, concurrency=8)
    report.score, report.rows[0].feedback, report.usage.total_tokens

A metric is any `fn(example, output) -> float | Score`, sync or async; `Score` carries text
feedback for optimizers. Built in: `exact_match`, `contains`, `f1`, `json_match`, `LLMJudge`.
Optimizers evaluate subsets (any list of Examples), read `report.scores` in row order, and
count module calls with a `CallCounter`. A `Runner` says where examples run: in this process
(`InProcessRunner`, the default) or on a cluster (`promptimus.distributed.RayRunner`).
`evaluate(..., batch=True)` sends the model calls through the providers' batch APIs at half
the price (`BatchOptions`, `BatchSummary`).
"""

from __future__ import annotations

from .batch_options import BatchOptions
from .batch_summary import BatchSummary
from .call_counter import CallCounter
from .dataset import DEFAULT_MAX_DATASET_BYTES, Dataset
from .evaluate import Metric, evaluate
from .example import Example
from .judge import LLMJudge, Verdict
from .metrics import contains, exact_match, f1, json_match
from .output_text import output_data, output_text
from .report import EvalReport, EvalRow
from .run_trace import RunTrace, TracedCall
from .runner import EvalJob, InProcessRunner, Runner
from .score import Score, as_score
from .usage_collector import UsageTotals

__all__ = [
    "DEFAULT_MAX_DATASET_BYTES",
    "BatchOptions",
    "BatchSummary",
    "CallCounter",
    "Dataset",
    "EvalJob",
    "EvalReport",
    "EvalRow",
    "Example",
    "InProcessRunner",
    "LLMJudge",
    "Metric",
    "RunTrace",
    "Runner",
    "Score",
    "TracedCall",
    "UsageTotals",
    "Verdict",
    "as_score",
    "contains",
    "evaluate",
    "exact_match",
    "f1",
    "json_match",
    "output_data",
    "output_text",
]
