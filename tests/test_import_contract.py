"""The parts of the import contract (`[tool.importlinter]` in pyproject.toml) that the code
keeps today, checked by `lint-imports` itself: the core knows no provider, and no tier below
`promptimus.compat` imports it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
