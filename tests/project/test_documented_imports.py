"""Every import the documentation shows works: each `from promptimus... import ...` and
`import promptimus...` line, and each `pm.<name>` chain, in the README, the documentation site's
pages (docs/), the examples, the tutorials' code cells and the docstrings of `src/`, resolves to
a real object. The names of promptimus 0.1 are checked by `tests/compat/test_compat_original.py`."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from locations import REPO

SRC = REPO / "src" / "promptimus"

FROM_IMPORT = re.compile(
    r"^\s*(?:>>>\s*)?from\s+(promptimus(?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n#]+)", re.MULTILINE
)
PLAIN_IMPORT = re.compile(r"^\s*(?:>>>\s*)?import\s+(promptimus(?:\.\w+)*)", re.MULTILINE)
PM_CHAIN = re.compile(r"(?<![\w.])pm((?:\.[A-Za-z_]\w*)+)")
# dotted names the documentation shows that are not import paths
NOT_IMPORT_PATHS = {
    "promptimus.durable.support",  # the DBOS workflow name of a durable agent named "support"
    "promptimus.mcp.server_stderr",  # a logger
    "promptimus.structural",  # a logger
    "promptimus.tool.server",  # a span attribute
}
DOTTED = re.compile(r"`(promptimus(?:\.[A-Za-z_]\w*)+)")  # `promptimus.observe.track_usage`


def documented_texts() -> dict[str, str]:
    """Where each text comes from -> the text: README, the docs pages, examples, notebook code
    cells, and every docstring (module, class, function) of src/."""
    texts = {"README.md": (REPO / "README.md").read_text(encoding="utf-8")}
    for path in sorted((REPO / "docs").rglob("*.md")):
        texts[path.relative_to(REPO).as_posix()] = path.read_text(encoding="utf-8")
    for path in sorted((REPO / "examples").glob("*.py")):
        texts[path.relative_to(REPO).as_posix()] = path.read_text(encoding="utf-8")
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
        texts[path.relative_to(REPO).as_posix()] = "\n".join(code)
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = [tree, *ast.walk(tree)]
        kinds = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        docs = [ast.get_docstring(node) for node in nodes if isinstance(node, kinds)]
        texts[path.relative_to(REPO).as_posix()] = "\n".join(doc for doc in docs if doc)
    return texts


def documented_names() -> dict[str, set[str]]:
    """Each thing to resolve ("module", "module:name" or "pm:a.b") -> where it is shown."""
    found: dict[str, set[str]] = {}
    for where, text in documented_texts().items():
        for module, names in FROM_IMPORT.findall(text):
            for part in names.strip("()").replace("\n", " ").split(","):
                name = part.split(" as ")[0].strip().rstrip("\\").strip()
                if name and name != "*" and name.isidentifier():
                    found.setdefault(f"{module}:{name}", set()).add(where)
        for module in PLAIN_IMPORT.findall(text):
            found.setdefault(module, set()).add(where)
        for dotted in set(DOTTED.findall(text)) - NOT_IMPORT_PATHS:
            found.setdefault(f"dotted:{dotted}", set()).add(where)
        if "import promptimus as pm" in text or where.startswith("src/"):
            for chain in PM_CHAIN.findall(text):
                found.setdefault(f"pm:{chain.lstrip('.')}", set()).add(where)
    return found


# Run in a child process: resolving every documented name imports the optional dependencies
# (Ray, DBOS, OpenTelemetry...), which the rest of the suite must not find already imported.
RESOLVE = """
import importlib, inspect, json, sys, warnings
warnings.simplefilter("ignore")
failed = {}
for item in json.loads(sys.stdin.read()):
    try:
        if item.startswith(("pm:", "dotted:")):
            parts = item.split(":")[1].split(".")
            parts = parts[1:] if parts[0] == "promptimus" else parts
            obj = importlib.import_module("promptimus")
            for i, part in enumerate(parts):
                if not (inspect.ismodule(obj) or inspect.isclass(obj)):
                    break
                if inspect.ismodule(obj) and not hasattr(obj, part):
                    try:  # a submodule its package does not import itself
                        importlib.import_module(".".join(["promptimus", *parts[: i + 1]]))
                    except ModuleNotFoundError:
                        pass
                obj = getattr(obj, part)
        elif ":" in item:
            module, name = item.split(":")
            getattr(importlib.import_module(module), name)
        else:
            importlib.import_module(item)
    except Exception as exc:
        failed[item] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""


def test_the_documentation_shows_many_imports() -> None:
    names = documented_names()
    # the scan works: it finds the README's tour, the docs pages and docstring examples alike
    assert len(names) > 50
    assert any("README.md" in where for where in names.values())
    assert any(w.startswith("docs/concepts/") for where in names.values() for w in where)
    assert any(w.startswith("docs/howto/") for where in names.values() for w in where)
    assert any(w.startswith("src/") for where in names.values() for w in where)
    assert "promptimus.agents:OpenaiToolCallingAgent" in names
    assert "pm:Session" in names


def test_every_documented_import_resolves() -> None:
    names = documented_names()
    result = subprocess.run(
        [sys.executable, "-c", RESOLVE],
        input=json.dumps(sorted(names)),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    failed = json.loads(result.stdout.strip().splitlines()[-1])
    report = {item: (error, sorted(names[item])) for item, error in failed.items()}
    assert report == {}


def test_the_resolver_reports_a_name_that_does_not_exist() -> None:
    result = subprocess.run(
        [sys.executable, "-c", RESOLVE],
        input=json.dumps(
            [
                "promptimus.agents:NoSuchAgent",
                "pm:NoSuchThing",
                "promptimus.nope",
                "dotted:promptimus.agents.NoSuchAgent",
                "dotted:promptimus.agents.OpenaiToolCallingAgent",
            ]
        ),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    failed = json.loads(result.stdout.strip().splitlines()[-1])
    assert sorted(failed) == [
        "dotted:promptimus.agents.NoSuchAgent",
        "pm:NoSuchThing",
        "promptimus.agents:NoSuchAgent",
        "promptimus.nope",
    ]


def test_paths_are_relative_to_the_repository() -> None:
    assert all(not Path(where).is_absolute() for where in documented_texts())
