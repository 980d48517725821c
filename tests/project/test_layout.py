"""The shape the house keeps (issue "One house"): no function in `src/` longer than 80 lines, and
tests that mirror the source, one folder per package, named by subject."""

from __future__ import annotations

import ast
import re

from locations import REPO

SRC = REPO / "src" / "promptimus"
TESTS = REPO / "tests"
MAX_FUNCTION_LINES = 80
# folders of tests that are not about one package: the project as a whole, the opt-in lane
# against a real model, and the helpers and fixtures every folder shares
NOT_A_PACKAGE = {"project", "real", "support"}


def long_functions() -> list[str]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - first + 1
                if length > MAX_FUNCTION_LINES:
                    where = path.relative_to(REPO)
                    found.append(f"{where}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_in_src_is_longer_than_80_lines() -> None:
    assert long_functions() == []


def test_the_length_check_sees_functions() -> None:
    # the walk above finds functions at all (a broken glob would make the check vacuous)
    sizes = [
        node.end_lineno - node.lineno
        for path in SRC.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno
    ]
    assert len(sizes) > 1000
    assert max(sizes) > 40


def test_no_test_file_sits_at_the_root_of_tests() -> None:
    assert sorted(p.name for p in TESTS.glob("test_*.py")) == []


def test_every_test_folder_mirrors_a_package_of_src() -> None:
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    packages |= {p.stem for p in SRC.glob("*.py")}
    folders = {
        p.name
        for p in TESTS.iterdir()
        if p.is_dir() and p.name not in NOT_A_PACKAGE and not p.name.startswith((".", "_"))
    }
    assert folders, "no test folders found"
    assert sorted(folders - packages) == []


def test_test_files_are_named_by_subject() -> None:
    how_made = re.compile(r"review|issue|fixup|wip", re.IGNORECASE)
    names = sorted(p.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py"))
    assert len(names) > 50
    assert [name for name in names if how_made.search(name)] == []


def test_shared_helpers_live_in_support_only() -> None:
    # helpers are imported by name through pytest's pythonpath (tests/support); a module that
    # is not a test, a conftest or an __init__ belongs there
    stray = sorted(
        p.relative_to(TESTS).as_posix()
        for p in TESTS.rglob("*.py")
        if "support" not in p.relative_to(TESTS).parts
        and not p.name.startswith("test_")
        and p.name not in {"conftest.py", "__init__.py"}
    )
    assert stray == []
