"""The tutorials in `notebooks/` run top to bottom, offline, against the fake OpenAI server.

Each notebook asserts what it teaches, so an API change that breaks a tutorial fails here with
the failing cell's source and error.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from locations import REPO

nbformat = pytest.importorskip(
    "nbformat", reason="nbformat is not installed; install the dev dependency group"
)
nbclient = pytest.importorskip(
    "nbclient", reason="nbclient is not installed; install the dev dependency group"
)

NOTEBOOKS = REPO / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("*.ipynb"))
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

# Run first in the kernel: a 'python3' kernelspec found elsewhere (say, in the user's Jupyter
# folder) could start another interpreter, which would test some other promptimus install.
_KERNEL_CHECK = f"""\
import os as _os, sys as _sys
assert _os.path.realpath(_sys.prefix) == {os.path.realpath(sys.prefix)!r}, (
    f"The 'python3' kernel runs {{_sys.executable}}, not this environment's {sys.executable!r}. "
    "Remove the other 'python3' kernelspec (jupyter kernelspec list) or run the tests from "
    "the project's environment."
)
"""


def _failure_report(name: str, nb: Any) -> str:
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", ()):
            if output.get("output_type") == "error":
                trace = _ANSI.sub("", "\n".join(output.get("traceback", ())))
                where = "the kernel check" if index == 0 else f"code cell {cell.get('id')}"
                return (
                    f"{name}: {where} raised {output['ename']}: {output['evalue']}\n\n"
                    f"--- source ---\n{cell.source}\n\n--- traceback ---\n{trace}"
                )
    return f"{name}: execution failed before any cell reported an error"


def test_the_tutorials_exist() -> None:
    assert [path.name for path in PATHS] == [
        "step_1_llm_providers.ipynb",
        "step_2_prompts_and_modules.ipynb",
        "step_3_prebuilt_modules.ipynb",
        "step_4_tool_calling_agents.ipynb",
        "step_5_tracing.ipynb",
        "step_6_training.ipynb",
        "step_7_serving.ipynb",
        "step_8_durable.ipynb",
    ]


@pytest.mark.parametrize("path", PATHS, ids=[path.stem for path in PATHS])
def test_notebook_runs_offline(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in nb.cells if cell.cell_type == "code"), (
        f"{path.name} is stored with outputs; clear them for clean diffs."
    )
    nb.cells.insert(0, nbformat.v4.new_code_cell(_KERNEL_CHECK))
    # Tutorial 5 would start its own Phoenix server; the plugin's tests already round-trip
    # through a real one, and a first start spends minutes creating Phoenix's database.
    os.environ["PROMPTIMUS_TUTORIAL_SKIP_PHOENIX"] = "1"
    client = nbclient.NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError:
        pytest.fail(_failure_report(path.name, nb), pytrace=False)


def _renamed_names() -> set[str]:
    """0.1's names for what is now called otherwise (each warns when used), leaving out old
    names that are some current object's name too."""
    from promptimus.compat.names import RENAMED

    today = {path.rpartition(".")[2] for names in RENAMED.values() for path in names.values()}
    return {old for names in RENAMED.values() for old in names} - today


@pytest.mark.parametrize("path", PATHS, ids=[path.stem for path in PATHS])
def test_the_tutorials_teach_todays_names(path: Path) -> None:
    renamed = _renamed_names()
    assert "DummyLLm" in renamed
    nb = nbformat.read(path, as_version=4)
    words = {word for cell in nb.cells for word in re.findall(r"\w+", cell.source)}
    assert sorted(words & renamed) == []
