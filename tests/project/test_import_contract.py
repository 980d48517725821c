"""The parts of the import contract (`[tool.importlinter]` in pyproject.toml) that the code
keeps today, checked by `lint-imports` itself (the core knows no provider) or on the import graph
it reads (grimp, TYPE_CHECKING imports included): tools and prompts know no agent, and the
agents, their loop, the prompts and the plain data import each other in no circle; no tier
below `promptimus.compat` imports it."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from locations import REPO

ROOT = REPO
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(contract: str) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS.exists(), f"{LINT_IMPORTS} is missing: install the dev dependency group"
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--contract", contract],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_core_and_the_bottom_tier_import_no_provider() -> None:
    result = lint("core-knows-no-provider")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


def test_no_tier_below_compat_imports_it() -> None:
    result = lint("compat-on-top")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout


@functools.cache
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("promptimus", cache_dir=None)


@pytest.mark.parametrize(
    ("package", "above"),
    [
        ("promptimus.tools", ("promptimus.agents",)),
        ("promptimus.prompts", ("promptimus.agents", "promptimus.modules")),
        ("promptimus.dto", ("promptimus.agents", "promptimus.tools")),
    ],
)
def test_a_tier_imports_nothing_from_above_it(package: str, above: tuple[str, ...]) -> None:
    modules = {package, *graph().find_descendants(package)}
    upward = sorted(
        (module, imported)
        for module in modules
        for imported in graph().find_modules_directly_imported_by(module)
        if imported.startswith(above)
    )
    assert upward == []


@pytest.mark.parametrize(
    "package",
    ["promptimus.agents", "promptimus.agents.loop", "promptimus.prompts", "promptimus.dto"],
)
def test_no_import_circle_among_the_modules_of(package: str) -> None:
    assert graph().nominate_cycle_breakers(package) == set()
