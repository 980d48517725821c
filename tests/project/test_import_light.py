"""`import promptimus` stays light: no HTTP client, no vendor SDK, no vector database."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = [
    "openai",
    "chromadb",
    "httpx",
    "numpy",
    "opentelemetry",
    "tomlkit",
    "tqdm",
    "mcp",
    "psycopg",
    "psycopg_pool",
    "redis",
    "ray",
    "dbos",
]


def imported_after(code: str) -> list[str]:
    probe = (
        f"{code}\n"
        "import json, sys\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "code",
    [
        "import promptimus",
        "import promptimus.core",
        "from promptimus import Module, Parameter, ModuleDict, ModuleList, Session",
        "import promptimus.errors",
        "import promptimus; promptimus.Prompt; promptimus.ImageContent",
        "import promptimus.dto.message, promptimus.dto.image",
        "from promptimus.common.rate_limiting import RateLimitedClient",
        "import promptimus.evals",
        "import promptimus; promptimus.evals.Dataset; promptimus.evals.evaluate",
        "import promptimus.tracing",
        "from promptimus import track_usage, budget, BudgetExceeded",
        "from promptimus.tracing import track_usage, budget, conventions",
        "import promptimus.core.provider_calls",
        "import promptimus.protocols",
        "import promptimus.observe.usage, promptimus.observe.budget",
        "from promptimus.evals.usage_collector import collecting",
        "import promptimus.mcp",
        "import promptimus.mcp.serve_command",
        "import promptimus.tools.tool",
        "import promptimus.sessions",
        "from promptimus.sessions import PostgresSessionStore, RedisSessionStore, SessionStore",
        "import promptimus; promptimus.sessions.SQLiteSessionStore",
        # building the network stores connects nothing and imports no driver until first use
        "from promptimus.sessions import PostgresSessionStore, RedisSessionStore\n"
        "PostgresSessionStore('postgresql://u:p@db/app'); RedisSessionStore('redis://db:6379/0')",
        "from promptimus.distributed import RayRunner; RayRunner(num_workers=2)",
        "from promptimus.evals import Runner, InProcessRunner, evaluate",
    ],
)
def test_import_pulls_in_no_heavy_dependency(code: str) -> None:
    assert imported_after(code) == []


def test_a_core_workflow_stays_light() -> None:
    code = """
import tempfile, pathlib
from promptimus import Module, Parameter

class Box(Module):
    async def forward(self):
        return self.prompt.value

box = Box()
box.prompt = Parameter("hi")
with tempfile.TemporaryDirectory() as folder:
    path = pathlib.Path(folder) / "box.toml"
    box.save(path)
    box.load(path)
assert box.run_sync() == "hi"
"""
    assert imported_after(code) == []


def test_usage_accounting_needs_no_opentelemetry() -> None:
    code = """
import asyncio
import promptimus as pm
from promptimus.core.provider_calls import provider_call

class Fake(pm.Module):
    async def forward(self):
        async with provider_call("llm", self, None, []) as call:
            call.output = pm.Message(role="assistant", content="x", usage=pm.Usage(total_tokens=3))
        return call.output

with pm.track_usage() as usage:
    asyncio.run(Fake()())
assert usage.total.total_tokens == 3, usage
"""
    assert imported_after(code) == []


def test_spans_import_opentelemetry_only_when_used() -> None:
    assert "opentelemetry.trace" in imported_after("from promptimus.tracing import instrument")


def test_durable_runs_import_dbos_only_when_used() -> None:
    assert imported_after("import promptimus.agents, promptimus.agents.loop.executor") == []
    assert "dbos" in imported_after("from promptimus.durable import DurableAgent")


def test_the_probe_can_see_heavy_imports() -> None:
    # guards the test above against passing vacuously: a real import is reported
    assert imported_after("import json") == []
    assert "httpx" in imported_after("import httpx")


def test_import_promptimus_does_not_import_evals() -> None:
    code = "import promptimus, sys; print(json.dumps([m for m in sys.modules if 'evals' in m]))"
    result = subprocess.run(
        [sys.executable, "-c", f"import json; {code}"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


def test_an_evaluation_without_a_progress_bar_stays_light() -> None:
    code = """
import asyncio
from promptimus import Module
from promptimus.evals import Dataset, evaluate, exact_match

class Echo(Module):
    async def forward(self, text):
        return text

data = Dataset.from_records([{"inputs": {"text": "a"}, "expected": "a"}])
report = asyncio.run(evaluate(Echo(), data, exact_match, progress=False))
assert report.score == 1.0
"""
    assert imported_after(code) == []


def test_training_loads_only_when_asked_for() -> None:
    # optim sits above evals and agents: `import promptimus` must not pull it in
    probe = (
        "import sys, promptimus, promptimus.modules\n"
        "print(sorted(m for m in sys.modules if m.startswith(('promptimus.optim', "
        "'promptimus.evals'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert imported_after("import promptimus.optim") == []  # and it stays light itself


def test_import_promptimus_does_not_import_the_command_line() -> None:
    probe = (
        "import sys, promptimus, promptimus.modules, promptimus.agents\n"
        "print(sorted(m for m in sys.modules if m.startswith('promptimus.cli')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    # the probe can see it: importing the CLI itself is reported
    seen = subprocess.run(
        [sys.executable, "-c", probe.replace("promptimus.agents", "promptimus.cli")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "promptimus.cli" in seen.stdout


def test_the_llm_wrappers_stay_light_and_sqlite_loads_only_for_sqlite_cache() -> None:
    code = (
        "from promptimus.llms import CachedLLM, FallbackLLM, MemoryCache, falls_through\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('sqlite3', '_sqlite3', 'openai', 'httpx'))))\n"
    )
    probe = f"import json, sys\nimport promptimus\n{code}"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []
    # the probe can see it: building an SQLiteCache does import sqlite3
    used = (
        probe
        + "import tempfile, os\nSQLiteCache = __import__('promptimus.llms').llms.SQLiteCache\n"
    )
    used += "SQLiteCache(os.path.join(tempfile.mkdtemp(), 'c.sqlite'))\n"
    used += "print(json.dumps('sqlite3' in sys.modules))\n"
    seen = subprocess.run([sys.executable, "-c", used], capture_output=True, text=True, timeout=60)
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.strip().splitlines()[-1] == "true"


def test_session_stores_import_their_drivers_only_when_used() -> None:
    # the probe can see them: a store that talks to its server has imported its driver
    for store, driver in (("PostgresSessionStore", "psycopg"), ("RedisSessionStore", "redis")):
        code = (
            "import asyncio, contextlib\n"
            f"from promptimus.sessions import {store}\n"
            f"store = {store}('postgresql://u@127.0.0.1:1/x' if '{driver}' == 'psycopg' "
            "else 'redis://127.0.0.1:1/0', timeout=0.5)\n"
            "with contextlib.suppress(Exception):\n"
            "    asyncio.run(store.list_sessions())\n"
        )
        assert driver in imported_after(code)


def test_import_promptimus_sessions_does_not_import_sqlite() -> None:
    probe = "import sys, promptimus.sessions\nprint('sqlite3' in sys.modules)\n"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_import_promptimus_never_imports_the_ray_runner() -> None:
    probe = (
        "import sys, promptimus, promptimus.evals, promptimus.optim\n"
        "print(sorted(m for m in sys.modules if m.startswith(('promptimus.distributed', 'ray'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    # the probe can see Ray: a runner imports it when it first prepares, and not before
    used = (
        "from promptimus.distributed.ray_runner import _ray\n_ray()\n"
        "import sys\nprint('ray' in sys.modules)\n"
    )
    seen = subprocess.run([sys.executable, "-c", used], capture_output=True, text=True, timeout=60)
    assert seen.returncode == 0, seen.stderr
    assert seen.stdout.strip().splitlines()[-1] == "True"
