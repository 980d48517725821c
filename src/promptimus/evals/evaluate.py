"""`evaluate`: run a module over examples, score every output, and report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..argument_checks import positive_int
from ..errors import EmptyDataset, InvalidArgument
from ..llms.batch_api import BatchStatus
from .batch_options import BatchOptions, batch_options
from .batch_rounds import BatchRounds, check_batchable
from .call_counter import CallCounter
from .example import Example, example_list
from .input_fit import check_inputs
from .progress import open_progress
from .report import EvalReport, EvalRow
from .run_example import Metric
from .runner import EvalJob, InProcessRunner, Runner, check_runner

__all__ = ["Metric", "evaluate"]


async def evaluate(
    module: Callable[..., Any],
    dataset: Sequence[Example],
    metric: Metric,
    *,
    concurrency: int = 8,
    progress: bool = True,
    counter: CallCounter | None = None,
    runner: Runner | None = None,
    batch: bool | BatchOptions = False,
) -> EvalReport:
    """Call `await module(**example.inputs)` for every example — at most `concurrency` at once,
    each in its own `Session` — score each output with `metric(example, output)` (sync or async,
    a number or a `Score`), and return an `EvalReport` whose rows follow the dataset's order.

    An exception from the module or the metric becomes that example's row (score 0, `error`)
    and the run goes on; a metric result that is not a finite number or a `Score` stops the run
    with `MetricResultError`. `dataset` may be a `Dataset` or any list of `Example`s (an
    optimizer's minibatch). With `counter`, the run reserves one call per example up front and
    raises `CallBudgetExceeded` before calling anything when they do not fit its `max_calls`.
    `progress` shows a tqdm bar on a terminal or in a notebook (see `promptimus.evals.progress`).
    `runner` says where the examples run: in this process (the default, `InProcessRunner`) or on
    workers (`promptimus.distributed.RayRunner`), with the same report either way.

    `batch=True` (or `BatchOptions(...)`) sends the module's model calls through the
    providers' batch APIs (OpenAI's Batch API, Anthropic's Message Batches API) at half the
    price, and gives the same rows as the direct path, with `report.batch` saying how many
    batches and rounds it took and what it cost (see `promptimus.evals.batch_rounds`). Every
    example runs at once (`concurrency` does not apply): a module whose later calls need earlier
    answers runs round by round, one batch per round. A model without a batch API is
    `BatchUnsupported` before any request; a batch that expired or failed is raised
    (`BatchExpired`, `BatchFailed`) once the rows are in; a request that failed alone fails
    its row (`BatchRequestFailed`). It runs in this process (no other `runner`).
    """
    examples = example_list(dataset, "evaluate's dataset")
    if not examples:
        raise EmptyDataset("evaluate got no examples; give it a dataset with at least one.")
    if not callable(metric):
        raise InvalidArgument(
            f"metric must be callable as metric(example, output), got {metric!r}."
        )
    concurrency = positive_int(concurrency, "concurrency")
    options = batch_options(batch)
    if options is not None and not isinstance(runner, InProcessRunner | None):
        raise InvalidArgument(
            "batch=True runs the examples in this process, gathering their model calls into "
            "batches: leave runner out, or evaluate without batch."
        )
    runner = check_runner(runner)
    check_inputs(module, examples, "evaluate's dataset")
    if options is not None:
        check_batchable(module)  # before anything is sent
    job = EvalJob(module, examples, metric, concurrency)
    if counter is not None:
        counter.check(len(examples))  # refuse before a runner starts anything
    await runner.prepare(job)
    if counter is not None:
        counter.reserve(len(examples))

    bar = open_progress(len(examples), progress)
    total, done = 0.0, 0

    def on_row(row: EvalRow) -> None:
        nonlocal total, done
        total += row.score
        done += 1
        bar.update(1)
        bar.set_postfix_str(f"score={total / done:.3f}")

    try:
        if options is None:
            return await runner.run(job, on_row)
        return await _run_batched(runner, job, options, on_row, bar)
    finally:
        bar.close()


async def _run_batched(
    runner: Runner,
    job: EvalJob,
    options: BatchOptions,
    on_row: Callable[[EvalRow], None],
    bar: Any,
) -> EvalReport:
    def on_status(status: BatchStatus) -> None:
        bar.set_postfix_str(
            f"{status.provider} batch {status.status}: {status.done}/{status.total}"
        )

    rounds = BatchRounds(options, len(job.examples), on_status)
    batched = EvalJob(rounds.member(job.module), job.examples, job.metric, len(job.examples))
    async with rounds.active():
        report = await runner.run(batched, on_row)
    if rounds.fatal is not None:
        raise rounds.fatal
    report.batch = rounds.summary
    return report
