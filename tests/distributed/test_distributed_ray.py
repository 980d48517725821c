"""`RayRunner` on a local Ray (two CPUs, one instance for this file): reports and training
histories equal to the in-process runner's, the module kept by each worker between batches, a
worker killed mid-batch, and the bad inputs refused before any example is spent.

The workers are real Ray processes; they reach the fake OpenAI server of this process over HTTP on
127.0.0.1 and find its address and key in their environment, as workers on a cluster would find
a real provider's. They import this file and `optim_task` (tests/support/) through PYTHONPATH."""

from __future__ import annotations

import functools
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from locations import SUPPORT
from optim_task import BASELINE, GOOD, PARTIAL, Task, dataset, fence, make_student, metric

import promptimus as pm
from promptimus import Module
from promptimus.distributed import RayRunner
from promptimus.dto import Message
from promptimus.errors import (
    InvalidArgument,
    MetricResultError,
    ModuleNotPicklable,
    OptionalDependencyMissing,
    WorkerLost,
    WorkerSetupFailed,
    WorkersFailedToStart,
)
from promptimus.evals import CallCounter, EvalReport, Example, LLMJudge, Score, evaluate
from promptimus.llms.openai import OpenAILike
from promptimus.optim import Reflective, fit
from promptimus.testing import FakeOpenAIServer

TESTS = str(Path(__file__).resolve().parent)
EVALUATE = importlib.import_module(
    "promptimus.evals.evaluate"
)  # the package's name is the function


def answer(body: dict[str, Any]) -> str:
    """The student does what its system prompt says (see optim_task); the teacher proposes
    PARTIAL for the baseline and GOOD for PARTIAL, so training takes two accepted steps; the
    judge gives full marks to an output in uppercase."""
    text = body["messages"][0]["content"]
    if body["model"] == "judge":
        output = body["messages"][-1]["content"].rsplit("## Output\n", 1)[-1].strip()
        return json.dumps({"score": float(output.isupper()), "feedback": "in capitals?"})
    if body["model"] == "teacher":
        return fence(GOOD) if PARTIAL.split(":")[0] in text else fence(PARTIAL)
    word = text.rsplit(":", 1)[-1].strip()
    shout = "uppercase" in text or ("capitals" in text and len(word) <= 3)
    return word.upper() if shout else word


@pytest.fixture(scope="module")
def cluster() -> Iterator[FakeOpenAIServer]:
    """One fake server and one local Ray for the file; a Ray that cannot start fails here.
    Workers run this interpreter directly: under `uv run`, Ray would otherwise start each one
    through `uv run` again, seconds per worker on a busy machine."""
    os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # read when ray is imported
    import ray

    server = FakeOpenAIServer().start()
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray puts its sockets inside
    path = os.pathsep.join(p for p in (TESTS, str(SUPPORT), os.environ.get("PYTHONPATH")) if p)
    env = {"PYTHONPATH": path, "OPENAI_API_KEY": server.api_key}
    env["OPENAI_BASE_URL"] = server.base_url
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            _temp_dir=temp,
            runtime_env={"env_vars": env},
        )
        yield server
    finally:
        ray.shutdown()
        server.stop()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def srv(cluster: FakeOpenAIServer) -> FakeOpenAIServer:
    cluster.clear()
    cluster.chat.respond_with(answer)
    return cluster


def llm(server: FakeOpenAIServer, model: str) -> OpenAILike:
    return OpenAILike(model, api_key=server.api_key, base_url=server.base_url, timeout=30.0)


def attach(module: Module) -> Module:
    """What a user writes: the worker builds its provider from its own environment."""
    return module.with_llm(pm.llms.resolve("openai:student"))


def attach_and_log(log: str, module: Module) -> Module:
    with open(log, "a", encoding="utf-8") as file:
        file.write(f"{os.getpid()}\n")
    return attach(module)


def rows_of(report: EvalReport) -> list[tuple[Any, ...]]:
    return [(r.example, r.output, r.score, r.feedback, r.error, r.usage) for r in report.rows]


def student_requests(server: FakeOpenAIServer) -> int:
    return sum(1 for body in server.chat.requests if body["model"] == "student")


class Bars:
    """Every progress bar evaluate opens, with the steps it was told."""

    def __init__(self) -> None:
        self.opened: list[tuple[int, list[int]]] = []

    def __call__(self, total: int, enabled: bool, description: str = "evaluate") -> Any:
        steps: list[int] = []
        self.opened.append((total, steps))
        bar = type("Bar", (), {})()
        bar.update = steps.append
        bar.set_postfix_str = lambda text: None
        bar.close = lambda: None
        return bar


def picky(example: Example, output: Message) -> Score:
    """The task's metric, which raises on one example: a metric error is that row's error."""
    if example.inputs.get("text") == "unscorable":
        raise ValueError("cannot score this one")
    return metric(example, output)


class Refusing(Task):
    """The task, which raises on one word: a module error is that row's error."""

    async def forward(self, text: str) -> Message:
        if text == "raise":
            raise ValueError("no such word")
        return await super().forward(text)


def attach_judge(judge: Module) -> Module:
    return judge.with_llm(pm.llms.resolve("openai:judge"))


async def test_reports_equal_in_process_ones_and_workers_keep_their_module(
    srv: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 12 words, an example the module raises on, one the metric raises on
    data = [*dataset(), Example({"text": "raise"}, "RAISE"), Example({"text": "unscorable"}, "X")]
    judge = LLMJudge("Full marks for an answer in uppercase.")
    task = Refusing(llm(srv, "student"))
    local = await evaluate(task, data, picky, progress=False)
    local_judged = await evaluate(task, data[:4], judge.with_llm(llm(srv, "judge")), progress=False)
    task.instr.prompt.value = GOOD
    local_good = await evaluate(task, data, picky, progress=False)
    task.instr.prompt.value = BASELINE
    bars = Bars()
    monkeypatch.setattr(EVALUATE, "open_progress", bars)
    log = tmp_path / "installs"
    setup = functools.partial(attach_and_log, str(log))
    runner = RayRunner(num_workers=2, setup=setup, metric_setup=attach_judge, batch_size=3)
    with runner:
        remote = await evaluate(task, data, picky, runner=runner)
        task.instr.prompt.value = GOOD  # new values travel as a state dict, not a new module
        remote_good = await evaluate(task, data, picky, runner=runner)
        installs = log.read_text().split()
        task.instr.prompt.value = BASELINE
        remote_judged = await evaluate(task, data[:4], judge, runner=runner)
        with pytest.raises(MetricResultError, match=r"returned the score 2\.0"):
            await evaluate(task, data, lambda example, output: 2.0, runner=runner)

    assert rows_of(remote) == rows_of(local) and remote.score == local.score == 4 / 14
    assert [row.error for row in remote.errors] == [
        "ValueError: no such word",
        "metric: ValueError: cannot score this one",
    ]
    assert rows_of(remote_good) == rows_of(local_good) and remote_good.score == 12 / 14
    assert remote.usage == local.usage and remote.usage.requests == 13
    assert rows_of(remote_judged) == rows_of(local_judged)
    assert remote_judged.metric_usage == local_judged.metric_usage  # summed over both workers
    assert remote_judged.metric_usage.requests == 4
    assert len(installs) == len(set(installs)) == 2  # once per worker, not per batch or run
    assert str(os.getpid()) not in installs
    assert set(log.read_text().split()) == set(installs)  # a new metric: same workers
    assert bars.opened[:2] == [(14, [1] * 14), (14, [1] * 14)]  # one bar a run, each row once


async def test_fit_on_workers_matches_fit_in_process_and_keeps_the_budget(
    srv: FakeOpenAIServer,
) -> None:
    data = dataset()
    train, val = data[:4], data[4:8]
    budget = 22  # spent to the last call: the final step is cut before its validation

    async def train_once(runner: Any) -> tuple[Any, Task, int]:
        srv.clear()
        srv.chat.respond_with(answer)
        task = Task(llm(srv, "student"))
        optimizer = Reflective(teacher=llm(srv, "teacher"), minibatch_size=2, seed=5)
        result = await fit(
            task, train, metric, optimizer=optimizer, valset=val, budget=budget,
            progress=False, runner=runner,
        )  # fmt: skip
        return result, task, student_requests(srv)

    local, local_task, local_calls = await train_once(None)
    with RayRunner(num_workers=2, setup=attach) as runner:
        remote, remote_task, remote_calls = await train_once(runner)

    assert [e["reason"].split(":")[0] for e in local.history] == [
        "baseline",
        "not better on minibatch",
        "beats best",
        "no failures",
        "budget spent before validation",
    ]
    assert remote.history == local.history
    assert remote_task.state_dict() == local_task.state_dict()
    assert remote_task.instr.prompt.value == PARTIAL
    assert remote.calls == local.calls == remote_calls == local_calls == budget
    assert remote.usage == local.usage and remote.usage.total_tokens > 0


NOTEBOOK = """
import asyncio, json, sys
from promptimus import Module
from promptimus.distributed import RayRunner
from promptimus.evals import Example, evaluate

class Shout(Module):  # defined in __main__, as in a notebook: the workers cannot import it
    async def forward(self, text):
        return text.upper() + "!"

class Polite(Shout):
    async def forward(self, text):
        return "please, " + await super().forward(text)

def metric(example, output):
    return float(output == example.expected)

async def main():
    data = [Example({"text": w}, expected=f"please, {w.upper()}!") for w in ("a", "bc", "def")]
    with RayRunner(address=sys.argv[1], num_workers=1) as runner:
        report = await evaluate(Polite(), data, metric, runner=runner, progress=False)
    print(json.dumps({"score": report.score, "rows": [[r.output, r.error] for r in report.rows]}))

asyncio.run(main())
"""


def test_a_script_joins_the_cluster_by_address_with_classes_defined_in_main(
    cluster: FakeOpenAIServer, tmp_path: Path
) -> None:
    import ray

    script = tmp_path / "notebook.py"
    script.write_text(NOTEBOOK, encoding="utf-8")
    address = ray.get_runtime_context().gcs_address
    env = {**os.environ, "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0"}
    done = subprocess.run(
        [sys.executable, str(script), address],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # before the wait for the cluster, one line says what it waits for
    assert f"promptimus: connecting RayRunner to the Ray cluster at {address}\n" in done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {
        "score": 1.0,
        "rows": [["please, A!", None], ["please, BC!", None], ["please, DEF!", None]],
    }


class Crashing(Task):
    """Ends its worker's process, once, at the word `_doomed` (the marker file says it did)."""

    def __init__(self, llm: Any, marker: str, doomed: str, every_time: bool = False) -> None:
        super().__init__(llm)
        self._marker, self._doomed, self._every_time = marker, doomed, every_time

    async def forward(self, text: str) -> Message:
        first = not os.path.exists(self._marker)  # noqa: ASYNC240 (then the process ends)
        if text == self._doomed and (self._every_time or first):
            with open(self._marker, "a", encoding="utf-8") as file:  # noqa: ASYNC230
                file.write(f"{os.getpid()}\n")
            os._exit(1)
        return await super().forward(text)


async def test_a_worker_killed_mid_batch_has_its_examples_run_elsewhere_once(
    srv: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = dataset()
    local = await evaluate(Task(llm(srv, "student")), data, metric, progress=False)
    marker = tmp_path / "died"
    task = Crashing(llm(srv, "student"), str(marker), doomed="fig")
    counter = CallCounter()
    bars = Bars()
    monkeypatch.setattr(EVALUATE, "open_progress", bars)
    with RayRunner(num_workers=2, setup=attach, batch_size=2) as runner:
        remote = await evaluate(task, data, metric, runner=runner, counter=counter)
        assert runner.restarts == 1

    assert len(marker.read_text().split()) == 1  # the crash happened, in one worker
    assert rows_of(remote) == rows_of(local)  # every example once, in dataset order
    assert remote.usage.requests == len(data)
    assert counter.calls == len(data)
    assert bars.opened == [(12, [1] * 12)]


async def test_examples_that_kill_every_worker_stop_the_run_naming_them(
    srv: FakeOpenAIServer, tmp_path: Path
) -> None:
    marker = tmp_path / "died"
    task = Crashing(llm(srv, "student"), str(marker), doomed="dog", every_time=True)
    runner = RayRunner(num_workers=1, setup=attach, batch_size=4, max_attempts=2)
    with runner, pytest.raises(WorkerLost, match=r"examples 0-3 died 2 times"):
        await evaluate(task, dataset(), metric, runner=runner)
    assert len(marker.read_text().split()) == 2


class WithLambda(Task):
    def __init__(self, llm: Any) -> None:
        super().__init__(llm)
        self.scorer = lambda text: len(text)


class WithFile(Task):
    def __init__(self, llm: Any, path: Path) -> None:
        super().__init__(llm)
        self.sub = Task(llm)
        self.sub.log = open(path, "w", encoding="utf-8")  # noqa: SIM115


def failing_setup(module: Module) -> Module:
    raise RuntimeError("no credentials on this worker")


async def test_bad_inputs_are_refused_before_any_example_is_spent(
    srv: FakeOpenAIServer, tmp_path: Path
) -> None:
    for workers in (0, -1, True, 2.0, "2"):
        with pytest.raises(InvalidArgument, match="num_workers must be an int >= 1"):
            RayRunner(num_workers=workers)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="setup must be a function"):
        RayRunner(num_workers=1, setup="attach")  # type: ignore[arg-type]

    counter = CallCounter(100)
    student = llm(srv, "student")
    cases: list[tuple[Module, Any, type[Exception], str]] = [
        (WithLambda(student), attach, ModuleNotPicklable, r"attribute 'scorer' holds a function"),
        (
            WithFile(student, tmp_path / "log.txt"),
            attach,
            ModuleNotPicklable,
            r"attribute 'sub.log' holds a TextIOWrapper.*cannot pickle",
        ),
        (Task(student), None, InvalidArgument, r"providers \(llm of 'root'\) do not travel"),
        (
            Task(student),
            failing_setup,
            WorkerSetupFailed,
            r"setup\(module\) on .*RuntimeError: no credentials",
        ),
    ]
    for module, setup, error, message in cases:
        runner = RayRunner(num_workers=1, setup=setup)
        with runner, pytest.raises(error, match=message) as raised:
            await evaluate(module, dataset(), metric, runner=runner, counter=counter)
        assert srv.api_key not in str(raised.value)
    assert counter.calls == 0 and srv.chat.requests == []
    cases[1][0].sub.log.close()


async def test_without_ray_installed_the_runner_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    runner = RayRunner(num_workers=1)
    with pytest.raises(OptionalDependencyMissing, match=r"pip install 'promptimus\[ray\]'"):
        await evaluate(Task(make_student()), [Example({"text": "a"}, "A")], metric, runner=runner)


async def test_workers_that_die_while_starting_are_reported_at_once_with_their_error(
    srv: FakeOpenAIServer,
) -> None:
    # an interpreter that cannot import what a worker needs, as under a wrong environment
    broken = f"{sys.executable} -c 'import no_such_package_on_the_workers'"
    counter = CallCounter(100)
    runner = RayRunner(
        num_workers=1, setup=attach, runtime_env={"py_executable": broken}, start_timeout=240
    )
    with runner, pytest.raises(WorkersFailedToStart) as raised:
        await evaluate(Task(llm(srv, "student")), dataset(), metric, runner=runner, counter=counter)
    message = str(raised.value)
    assert "died while starting" in message  # not "did not start within 240 s"
    assert "No module named 'no_such_package_on_the_workers'" in message
    assert repr(broken) in message  # the interpreter the workers ran
    assert counter.calls == 0 and srv.chat.requests == []


UV_DRIVER = """
import asyncio, json, sys
from promptimus import Module
from promptimus.distributed import RayRunner
from promptimus.evals import Example, evaluate

class Shout(Module):
    async def forward(self, text):
        return text.upper()

async def main():
    data = [Example({"text": w}, w.upper()) for w in ("a", "bc")]
    with RayRunner(address=sys.argv[1], num_workers=1, start_timeout=180) as runner:
        report = await evaluate(Shout(), data, lambda e, o: float(o == e.expected),
                                runner=runner, progress=False)
    print(json.dumps({"score": report.score, "errors": [r.error for r in report.rows]}))

asyncio.run(main())
"""


def test_a_driver_started_by_uv_run_gets_workers_on_its_own_interpreter(
    cluster: FakeOpenAIServer, tmp_path: Path
) -> None:
    """Started by `uv run`, Ray's uv hook would start each worker by `uv run` in a copy of the
    project, whose new environment lacks ray: the workers must use the driver's interpreter."""
    import ray

    uv = shutil.which("uv")
    assert uv is not None, "the suite runs under uv; uv must be on PATH"
    project = tmp_path / "app"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "0"\nrequires-python = ">=3.11"\ndependencies = []\n',
        encoding="utf-8",
    )
    (project / ".gitignore").write_text(".venv\n", encoding="utf-8")
    (project / ".venv").symlink_to(sys.prefix)  # the driver's environment: ray installed
    (project / "driver.py").write_text(UV_DRIVER, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.pop("RAY_ENABLE_UV_RUN_RUNTIME_ENV", None)  # Ray's uv hook on, as for a user
    env["UV_OFFLINE"] = "1"
    address = ray.get_runtime_context().gcs_address
    done = subprocess.run(
        [uv, "run", "--no-sync", "python", "driver.py", address],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "score": 1.0,
        "errors": [None, None],
    }
