"""`RayRunner`: run `evaluate` and `fit` on Ray workers, with the report the in-process runner
gives.

    def attach(module):                    # runs on each worker, after the module arrives
        return module.with_llm(pm.llms.resolve("openai:gpt-4o-mini"))  # keys from its environment

    runner = RayRunner(num_workers=8, setup=attach)
    report = await evaluate(agent, data, metric, runner=runner)

How it runs: `prepare` checks that the module, the metric and `setup` can travel (naming the
part that cannot), connects to Ray (`address`, or a local Ray when none is running), starts the
workers (Ray actors) and has each take the module and run `setup` — any failure is raised then,
before an example is counted. `run` cuts the examples into batches and hands them to whichever
worker is free; the values of the module's parameters travel as a state dict with each
evaluation's first batch to each worker, so a training run ships its module once. Rows come
back to the driver, which puts them in dataset order and feeds the one progress bar.

Joining a cluster runs off the event loop and is bounded by `start_timeout`, as is starting the
workers. On a local cluster (one this runner started, or whose nodes are all this machine) the
workers run the driver's own interpreter, unless a `runtime_env` (the runner's or the job's)
names another (`py_executable`, `pip`, `uv`, `conda`, a container): started from `uv run`, Ray
would otherwise start each worker through `uv run` in a copy of the working directory, in a new
environment without the packages installed around the driver. A worker process that dies while
starting (an import error) is reported at once, with its error, instead of after the timeout.

A worker that dies (its process exits, its machine goes away) loses its batch: the batch goes
back in the queue, another worker runs it, and a new worker takes the dead one's place; the
examples are counted once. A batch that has lost its worker `max_attempts` times stops the run
(`WorkerLost`) instead of killing workers forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from ..argument_checks import finite_number, positive_int
from ..core import Module
from ..errors import (
    InvalidArgument,
    MetricResultError,
    OptionalDependencyMissing,
    RunnerError,
    WorkerLost,
    WorkerSetupFailed,
    WorkersFailedToStart,
    WorkersUnavailable,
)
from ..evals.report import EvalReport, EvalRow
from ..evals.runner import EvalJob
from ..evals.usage_collector import UsageTotals
from .joining import StartWatch, check_reachable, in_daemon_thread
from .travel import function_bytes, module_bytes, providers_left_behind
from .worker import BatchResult, EvalWorker

__all__ = ["RayRunner", "Setup"]

_START_POLL = 0.5  # seconds between looks for workers that died while starting
# runtime_env fields that choose the workers' interpreter
_INTERPRETER_KEYS = frozenset({"py_executable", "pip", "uv", "conda", "container", "image_uri"})
_BATCHES_PER_WORKER = 8  # at least, when the run is large enough to cut that fine
_MAX_BATCH = 64

Setup = Callable[[Any], Any]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise OptionalDependencyMissing(
            "RayRunner needs Ray: pip install 'promptimus[ray]'."
        ) from None
    return ray


def _describe(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)  # a RayTaskError carries the worker's exception
    if isinstance(cause, BaseException):
        exc = cause
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1]}" if text else type(exc).__name__


def _from_uv_hook(py_executable: Any) -> bool:
    """Whether the job's `py_executable` is the `uv run ...` command Ray's uv hook wrote."""
    words = str(py_executable).split()
    return len(words) > 1 and words[0].rsplit("/", 1)[-1] == "uv" and words[1] == "run"


def _structure(module: Module) -> tuple[Any, ...]:
    """What must not change for the workers' copy to stay valid with new values: the modules'
    places and classes, and the state dict's keys."""
    tree = tuple((path, type(node).__qualname__) for path, node in module.named_modules())
    return (tree, tuple(module.state_dict()))


@dataclass
class _Batch:
    number: int
    indexed: list[tuple[int, Any]]
    attempts: int = 0

    def names(self) -> str:
        first, last = self.indexed[0][0], self.indexed[-1][0]
        return f"example {first}" if first == last else f"examples {first}-{last}"


@dataclass
class _Shipment:
    """What every worker holds: the pickled module, metric and setups, and what they came from."""

    module: weakref.ref[Any]
    metric: Any
    keys: tuple[Any, ...]
    payload: tuple[bytes, bytes | None, bytes, bytes | None]


class _Slot:
    """One worker place: its actor (a new one after a death)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor
        self.alive = True


class RayRunner:
    """Runs `evaluate`'s examples (and so `fit`'s evaluations) on `num_workers` Ray workers.

    - `num_workers`: workers (Ray actors) to start; by default one per CPU of the cluster
      (divided by `num_cpus_per_worker`).
    - `setup(module)`: runs on each worker once the module arrives, to attach what stayed
      behind (providers: clients and keys never travel); returns the module to use, or None
      for the same one. May be async. A module that has providers needs one.
    - `address`: the Ray cluster to join (`"auto"`, `"ray://head:10001"`) when Ray is not
      initialised yet; None starts a local Ray. A runner that started Ray shuts it down on
      `close()`.
    - `metric_setup(metric)`: the same for a metric that is a module (an `LLMJudge`); a metric
      that is a plain function travels as it is.
    - `batch_size`: examples per batch (default: evaluate's `concurrency`, fewer for small
      runs so every worker gets some). `concurrency` is per worker: each runs that many of its
      batch's examples at once.
    - `num_cpus_per_worker`, `runtime_env`: passed to Ray for each worker (a `runtime_env` with
      a `working_dir` or `pip` list brings your code and packages to the cluster's machines).
      On a local cluster the workers run this interpreter (`sys.executable`) unless a
      `runtime_env` names another (`py_executable`, `pip`, `uv`, `conda`, a container).
    - `max_attempts`: times a batch may lose its worker before the run stops (`WorkerLost`).
    - `start_timeout`: seconds to wait for joining the cluster, and for workers to start and
      take the module (a worker process that dies while starting is reported at once).

    `restarts` counts the workers started again after one died. Use it with `with` (or call
    `close()`) to stop the workers; they also stop with the driver.
    """

    def __init__(
        self,
        num_workers: int | None = None,
        *,
        setup: Setup | None = None,
        address: str | None = None,
        metric_setup: Setup | None = None,
        batch_size: int | None = None,
        num_cpus_per_worker: float = 1.0,
        runtime_env: dict[str, Any] | None = None,
        max_attempts: int = 3,
        start_timeout: float = 300.0,
    ) -> None:
        self.num_workers = None if num_workers is None else positive_int(num_workers, "num_workers")
        for name, fn in (("setup", setup), ("metric_setup", metric_setup)):
            if fn is not None and not callable(fn):
                raise InvalidArgument(
                    f"{name} must be a function (module) -> module, run on each worker; got "
                    f"{type(fn).__name__}."
                )
        if address is not None and not isinstance(address, str):
            raise InvalidArgument(f"address must be a str such as 'auto', got {address!r}.")
        if runtime_env is not None and not isinstance(runtime_env, dict):
            raise InvalidArgument(f"runtime_env must be a dict, got {type(runtime_env).__name__}.")
        self.setup = setup
        self.metric_setup = metric_setup
        self.address = address
        self.batch_size = None if batch_size is None else positive_int(batch_size, "batch_size")
        self.num_cpus_per_worker = finite_number(num_cpus_per_worker, "num_cpus_per_worker")
        self.runtime_env = runtime_env
        self.max_attempts = positive_int(max_attempts, "max_attempts")
        self.start_timeout = finite_number(start_timeout, "start_timeout", positive=True)
        self.restarts = 0
        self._slots: list[_Slot] = []
        self._shipment: _Shipment | None = None
        self._versions = 0
        self._owns_ray = False
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self._actor_class: Any = None
        self._worker_env: dict[str, Any] | None = None
        self._hold = threading.Event()  # the thread that started Ray lives until it shuts down

    # --- prepare ---------------------------------------------------------------------------

    def _run_lock(self) -> asyncio.Lock:
        # one evaluation at a time (the workers hold one set of values); a lock belongs to an
        # event loop, and a runner may outlive one (asyncio.run twice in a script)
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def prepare(self, job: EvalJob) -> None:
        async with self._run_lock():
            _ray()  # first: without Ray, say what to install
            shipment = self._shipment_for(job)
            ray = await self._connect()
            wanted = self.num_workers or self._cluster_workers(ray)
            self._slots = [slot for slot in self._slots if slot.alive]
            if shipment is not self._shipment:
                self._shipment = None  # workers hold nothing valid until every one has taken it
                await self._install(self._slots, shipment)
                self._shipment = shipment
            if len(self._slots) < wanted:
                fresh = [_Slot(self._start_actor()) for _ in range(wanted - len(self._slots))]
                await self._install(fresh, shipment)
                self._slots.extend(fresh)

    def _shipment_for(self, job: EvalJob) -> _Shipment:
        module, metric = job.module, job.metric
        if not isinstance(module, Module):
            raise InvalidArgument(
                f"RayRunner runs Modules (they travel to the workers as pickles); got "
                f"{type(module).__name__}. Wrap the function in a Module's forward."
            )
        keys = _structure(module)
        current = self._shipment
        if (
            current is not None
            and current.module() is module
            and current.metric is metric
            and current.keys == keys
        ):
            return current
        left = providers_left_behind(module)
        if left and self.setup is None:
            raise InvalidArgument(
                f"The module's providers ({', '.join(left)}) do not travel to the workers "
                "(their clients hold keys and connections), and this RayRunner has no setup to "
                "attach new ones there. Pass RayRunner(setup=attach), where attach(module) "
                "returns module.with_llm(...) built from the worker's environment."
            )
        if isinstance(metric, Module):
            judged = providers_left_behind(metric)
            if judged and self.metric_setup is None:
                raise InvalidArgument(
                    f"The metric's providers ({', '.join(judged)}) do not travel to the "
                    "workers; pass RayRunner(metric_setup=...) to attach them there."
                )
            metric_bytes = module_bytes(metric, "metric")
        else:
            metric_bytes = function_bytes(metric, "metric")
        setup = self.setup
        metric_setup = self.metric_setup if isinstance(metric, Module) else None
        payload = (
            module_bytes(module),
            None if setup is None else function_bytes(setup, "setup"),
            metric_bytes,
            None if metric_setup is None else function_bytes(metric_setup, "metric_setup"),
        )
        return _Shipment(weakref.ref(module), metric, keys, payload)

    async def _connect(self) -> Any:
        ray = _ray()
        if ray.is_initialized():
            return ray
        where = self.address or "a new local Ray"
        await check_reachable(self.address, self.start_timeout)
        from .announce import announce_ray_start

        announce_ray_start(self.address)  # one line: what the wait that follows is for
        try:
            async with asyncio.timeout(self.start_timeout):
                # ray.init blocks (and retries an address that does not answer): off the loop
                await in_daemon_thread(lambda: ray.init(address=self.address), self._hold)
        except TimeoutError:
            raise WorkersUnavailable(
                f"RayRunner could not join {where} within start_timeout={self.start_timeout:g} "
                "s. Check that the cluster is up (ray status) and the address is its head's, "
                "or raise start_timeout."
            ) from None
        except Exception as exc:
            raise WorkersUnavailable(
                f"RayRunner could not connect to {where}: {_describe(exc)}. Start the "
                "cluster (ray start --head), or pass its address."
            ) from None
        self._owns_ray = True
        return ray

    def _cluster_workers(self, ray: Any) -> int:
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        per = self.num_cpus_per_worker
        return max(1, int(cpus // per) if per > 0 else int(cpus))

    def _start_actor(self) -> Any:
        if self._actor_class is None:
            options: dict[str, Any] = {
                "num_cpus": self.num_cpus_per_worker,
                "max_restarts": 0,  # a dead worker is replaced by the runner, with the module
                "max_task_retries": 0,
                "max_concurrency": 1,  # one batch at a time; the batch has its concurrency
            }
            runtime_env = self._worker_env = self._worker_runtime_env()
            if runtime_env:
                options["runtime_env"] = runtime_env
            self._actor_class = _ray().remote(**options)(EvalWorker)
        return self._actor_class.remote()

    def _worker_runtime_env(self) -> dict[str, Any]:
        """The workers' runtime_env: the runner's, plus the driver's interpreter on a local
        cluster when no runtime_env chooses one (Ray's `uv run` hook would choose `uv run`)."""
        ray = _ray()
        env = dict(self.runtime_env or {})
        if _INTERPRETER_KEYS & env.keys() or not self._local_cluster(ray):
            return env
        job = dict(ray.get_runtime_context().runtime_env or {})
        chosen = _INTERPRETER_KEYS & job.keys()
        if chosen - {"py_executable"} or (chosen and not _from_uv_hook(job["py_executable"])):
            return env  # the job chose the workers' interpreter itself
        env["py_executable"] = sys.executable
        return env

    def _interpreter(self) -> str:
        env = self._worker_env or {}
        chosen = sorted(_INTERPRETER_KEYS & env.keys())
        if "py_executable" in env:
            return repr(env["py_executable"])
        if chosen:
            return f"the interpreter of runtime_env {chosen[0]!r}"
        return "the interpreter the cluster's runtime_env gives them"

    def _local_cluster(self, ray: Any) -> bool:
        if self._owns_ray:
            return True
        if (self.address or "").startswith("ray://"):
            return False  # a client: the cluster's machines are elsewhere
        here = ray.get_runtime_context().get_node_id()
        alive = [node.get("NodeID") for node in ray.nodes() if node.get("Alive")]
        return bool(alive) and all(node == here for node in alive)

    async def _install(self, slots: list[_Slot], shipment: _Shipment) -> None:
        """Every slot's worker takes `shipment`, or `WorkerSetupFailed` (`WorkersFailedToStart`
        as soon as a worker process dies while starting) / `WorkersUnavailable`."""
        if not slots:
            return
        ray = _ray()
        watch = StartWatch.begin()
        payload = [ray.put(part) if part is not None else None for part in shipment.payload]
        calls = asyncio.ensure_future(
            asyncio.gather(*[slot.actor.install.remote(*payload) for slot in slots],
                           return_exceptions=True)
        )  # fmt: skip
        try:
            async with asyncio.timeout(self.start_timeout):
                while not calls.done():
                    await asyncio.wait({calls}, timeout=_START_POLL)
                    died = watch.failures() if watch is not None else None
                    if died is not None and not calls.done():
                        self._stop_all(slots)
                        raise WorkersFailedToStart(
                            f"{died.count} Ray worker process(es) died while starting: "
                            f"{died.error}. The workers run {self._interpreter()}; make "
                            "promptimus, ray and your code importable there (or pass "
                            "runtime_env={'py_executable': ...}). No example was run."
                        )
        except TimeoutError:
            free = ray.available_resources().get("CPU", 0)
            self._stop_all(slots)
            raise WorkersUnavailable(
                f"Ray did not start {len(slots)} worker(s) within {self.start_timeout:g} s "
                f"({free:g} CPUs free, each worker asks for {self.num_cpus_per_worker:g}). "
                "Ask for fewer workers or give the cluster more machines; if CPUs were free, "
                "the worker processes fail as they start: see raylet.err in the nodes' Ray logs."
            ) from None
        finally:
            if not calls.done():
                # a cancelled gather ends holding a CancelledError as its exception: read it
                # when it lands, or asyncio logs "exception was never retrieved" beside the error
                calls.add_done_callback(_read_outcome)
                calls.cancel()
        self._check_installed(slots, calls.result())

    def _check_installed(self, slots: list[_Slot], failures: list[Any]) -> None:
        for failure in failures:
            if isinstance(failure, BaseException):
                self._stop_all(slots)
                raise WorkerSetupFailed(
                    f"A worker failed while taking the module: {_describe(failure)} (the worker "
                    "process died or could not be reached). No example was run."
                )
            if failure is not None:
                self._stop_all(slots)
                raise WorkerSetupFailed(
                    f"A worker could not take the module: {failure}. No example was run. "
                    "Make the code importable on the workers (runtime_env={'working_dir': ...} "
                    "or an installed package) and `setup` work there."
                )

    def _stop_all(self, slots: list[_Slot]) -> None:
        for slot in slots:
            self._stop(slot)

    def _stop(self, slot: _Slot) -> None:
        slot.alive = False
        with contextlib.suppress(Exception):  # already gone
            _ray().kill(slot.actor)

    # --- run -------------------------------------------------------------------------------

    def _batches(self, job: EvalJob) -> list[_Batch]:
        """Batches of about `concurrency` examples (fewer for small runs, so each worker gets
        some; more for large ones, up to 64, so the round trips stay few)."""
        indexed = list(enumerate(job.examples))
        workers = max(1, len(self._slots))
        size = self.batch_size or min(
            max(job.concurrency, math.ceil(len(indexed) / (workers * _BATCHES_PER_WORKER))),
            _MAX_BATCH,
            math.ceil(len(indexed) / workers),
        )
        return [
            _Batch(number, indexed[start : start + size])
            for number, start in enumerate(range(0, len(indexed), size))
        ]

    async def run(self, job: EvalJob, on_row: Callable[[EvalRow], None]) -> EvalReport:
        if self._shipment is None or self._shipment.module() is not job.module:
            raise RunnerError("RayRunner.run() needs prepare(job) first (evaluate calls both).")
        async with self._run_lock():
            return await self._run(job, on_row)

    async def _run(self, job: EvalJob, on_row: Callable[[EvalRow], None]) -> EvalReport:
        ray = _ray()
        self._versions += 1
        version = self._versions
        # inside a list, so Ray does not resolve it for every batch: a worker fetches it once
        values = [ray.put(job.module.state_dict())]
        batches = self._batches(job)
        queue: deque[_Batch] = deque(batches)
        results: dict[int, BatchResult] = {}
        wake = asyncio.Event()

        async def drive(slot: _Slot) -> None:
            while len(results) < len(batches):
                if not queue:
                    wake.clear()
                    await wake.wait()  # a lost batch may come back, or the run may end
                    continue
                batch = queue.popleft()
                try:
                    result: BatchResult = await slot.actor.run_batch.remote(
                        version, values, batch.indexed, job.concurrency
                    )
                except ray.exceptions.RayActorError:
                    batch.attempts += 1
                    if batch.attempts >= self.max_attempts:
                        self._stop(slot)
                        raise WorkerLost(
                            f"The worker running {batch.names()} died {batch.attempts} times; "
                            "something in them ends the process (a crash, os._exit, memory). "
                            "Run them in process to see the error."
                        ) from None
                    queue.append(batch)
                    wake.set()
                    await self._revive(slot)
                    continue
                except ray.exceptions.RayError as exc:
                    raise RunnerError(
                        f"A worker failed running {batch.names()}: {_describe(exc)}."
                    ) from None
                if result.metric_error is not None:
                    raise MetricResultError(result.metric_error)
                results[batch.number] = result
                for row in result.rows:
                    on_row(row)
                wake.set()
            wake.set()

        # one batch per worker at a time: when a worker dies, the batch it ran is the one to
        # blame (and to count an attempt against), never one that only waited in its queue
        drivers = [asyncio.create_task(drive(slot)) for slot in self._slots]
        try:
            done, _ = await asyncio.wait(drivers, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                task.result()  # raise the first failure
            await asyncio.gather(*drivers)
        finally:
            for task in drivers:
                task.cancel()
            await asyncio.gather(*drivers, return_exceptions=True)
        rows: list[EvalRow] = []
        metric_usage = UsageTotals()
        for batch in batches:
            rows.extend(results[batch.number].rows)
            metric_usage.add(results[batch.number].metric_usage)
        return EvalReport(rows, metric_usage)

    async def _revive(self, slot: _Slot) -> None:
        """A new worker, holding the module, in the place of `slot`'s dead one."""
        assert self._shipment is not None
        self._stop(slot)
        fresh = _Slot(self._start_actor())
        try:
            await self._install([fresh], self._shipment)
        except BaseException:  # cancelled with the run, or failed: no worker left behind
            self._stop(fresh)
            raise
        slot.actor, slot.alive = fresh.actor, True
        self.restarts += 1

    # --- lifetime --------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the workers (and Ray, when this runner started it)."""
        for slot in self._slots:
            self._stop(slot)
        self._slots = []
        self._shipment = None
        if self._owns_ray:
            self._owns_ray = False
            _ray().shutdown()
            self._hold.set()
            self._hold = threading.Event()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        workers = "cluster CPUs" if self.num_workers is None else self.num_workers
        where = f", address={self.address!r}" if self.address else ""
        return f"RayRunner(num_workers={workers}{where}, running={len(self._slots)})"


def _read_outcome(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
