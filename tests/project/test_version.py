"""The package's version: one number, in the package and its metadata, above the 0.1 series it
continues (0.1.26 was the last)."""

from __future__ import annotations

import importlib.metadata
import tomllib

import pytest
from locations import REPO

import promptimus
from promptimus.cli import main


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def test_the_version_continues_the_0_1_series() -> None:
    assert _release(promptimus.__version__) > (0, 1, 26)


def test_the_package_and_its_metadata_agree() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert promptimus.__version__ == project["version"]
    assert importlib.metadata.version("promptimus") == project["version"]


def test_the_command_line_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"promptimus {promptimus.__version__}\n"
