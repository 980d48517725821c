"""The documentation's code runs as written: every ```python block of every page under docs/,
in page order, as one script per page in a fresh interpreter.

Conventions (the pages follow them; `extract_blocks` reads them):
- a line `<!-- not-run: <reason> -->` right before a fence keeps that block out of the script;
  such blocks are counted, each needs a reason, and there must stay few of them;
- a fenced python block between a line `<!-- setup` and a line `-->` runs but is hidden from
  the reader (an HTML comment): a page starts the fake OpenAI server there.

Besides running, each page's script is read: no top-level `await` (a reader pasting a block
into a plain script would get a SyntaxError) and no top-level name used before the page
defines or imports it.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from locations import REPO

DOCS = REPO / "docs"
MAX_SKIPPED = 4  # blocks marked not-run on all pages together (2 today: a Ray cluster, Phoenix)
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(.*?)\s*-->$")
FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    code: str
    kind: str  # "shown", "hidden" (in a setup comment) or "skipped" (not-run)
    reason: str = ""


def extract_blocks(page: str, text: str) -> list[Block]:
    """The python blocks of one page, in order, with what the page says to do with each."""
    blocks: list[Block] = []
    lines = text.splitlines()
    in_setup = False
    previous = ""  # the last non-blank line before the current one
    i = 0
    while i < len(lines):
        stripped = lines[i].strip()
        fence = FENCE.match(stripped)
        if fence:
            ticks, language = fence.group(1), fence.group(2).lower()
            body: list[str] = []
            start = i
            i += 1
            while i < len(lines) and lines[i].strip() != ticks:
                body.append(lines[i])
                i += 1
            if language in ("python", "py"):
                skip = NOT_RUN.match(previous)
                kind = "skipped" if skip else "hidden" if in_setup else "shown"
                reason = skip.group(1) if skip else ""
                code = _dedent(body)
                blocks.append(Block(page, start + 1, code, kind, reason))
            previous = ticks
        elif stripped == "<!-- setup":
            in_setup = True
        elif stripped == "-->" and in_setup:
            in_setup = False
        if stripped and not fence:
            previous = stripped
        i += 1
    return blocks


def _dedent(body: list[str]) -> str:
    """A fence indented under a list item keeps that indent: take it off."""
    indents = [len(line) - len(line.lstrip()) for line in body if line.strip()]
    cut = min(indents, default=0)
    return "\n".join(line[cut:] for line in body) + "\n"


def page_script(blocks: list[Block]) -> str:
    """The blocks a page runs, joined, each preceded by a comment naming its line."""
    parts = [f"# --- {b.page}:{b.line} ({b.kind})\n{b.code}" for b in blocks if b.kind != "skipped"]
    return "\n".join(parts)


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def page_id(path: Path) -> str:
    return path.relative_to(DOCS).as_posix()


BUILTINS = set(dir(builtins)) | {"__file__", "__name__"}


def _bound(node: ast.AST) -> set[str]:
    """Every name a node binds anywhere inside it (assignments, imports, defs, arguments,
    comprehension and loop targets, `as` names, walrus, except names)."""
    names: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store | ast.Del):
            names.add(sub.id)
        elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(sub.name)
        elif isinstance(sub, ast.arg):
            names.add(sub.arg)
        elif isinstance(sub, ast.alias):
            names.add((sub.asname or sub.name).split(".")[0])
        elif isinstance(sub, ast.ExceptHandler) and sub.name:
            names.add(sub.name)
    return names


def _loaded(node: ast.AST) -> list[ast.Name]:
    return [s for s in ast.walk(node) if isinstance(s, ast.Name) and isinstance(s.ctx, ast.Load)]


def names_used_before_defined(script: str) -> list[str]:
    """Top-level names a page loads before it defines them: `name (line N)` for each.

    Statements run in order: a statement may use what the statements before it bound (and what
    it binds itself, e.g. a comprehension's variable). A function or class body runs later, so
    it may use anything the page binds anywhere at top level."""
    tree = ast.parse(script)
    everything = set().union(*(_bound(stmt) for stmt in tree.body)) | BUILTINS
    defined = set(BUILTINS)
    problems: list[str] = []
    for stmt in tree.body:
        late = isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        known = (everything if late else defined) | _bound(stmt)
        if late:  # decorators, defaults and bases run now
            eager = [*stmt.decorator_list, *getattr(stmt, "bases", [])]
            for part in eager:
                problems += [
                    f"{n.id} (line {n.lineno})" for n in _loaded(part) if n.id not in defined
                ]
        later = stmt.body if late else [stmt]
        loads = [n for part in later for n in _loaded(part)]
        problems += [f"{n.id} (line {n.lineno})" for n in loads if n.id not in known]
        defined |= _bound(stmt)
    return problems


def top_level_awaits(script: str) -> list[int]:
    """Lines of `await` / `async for` / `async with` outside any async function."""
    found: list[int] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.Await | ast.AsyncFor | ast.AsyncWith):
                found.append(child.lineno)
            visit(child)

    visit(ast.parse(script))
    return found


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in extract_blocks(page_id(p), p.read_text("utf-8"))]


def test_the_site_has_pages_with_code() -> None:
    blocks = all_blocks()
    run = [b for b in blocks if b.kind != "skipped"]
    skipped = [b for b in blocks if b.kind == "skipped"]
    print(f"\ndocs: {len(pages())} pages, {len(blocks)} python blocks, {len(skipped)} not run")
    for b in skipped:
        print(f"  not run: {b.page}:{b.line}: {b.reason}")
    assert len(pages()) >= 20
    assert len(run) >= 40


def test_few_blocks_are_skipped_and_each_says_why() -> None:
    skipped = [b for b in all_blocks() if b.kind == "skipped"]
    assert len(skipped) <= MAX_SKIPPED, [f"{b.page}:{b.line}" for b in skipped]
    assert [f"{b.page}:{b.line}" for b in skipped if len(b.reason) < 10] == []


@pytest.mark.parametrize("path", pages(), ids=page_id)
def test_page_code_reads_in_order(path: Path) -> None:
    script = page_script(extract_blocks(page_id(path), path.read_text("utf-8")))
    assert top_level_awaits(script) == []
    assert names_used_before_defined(script) == []


@pytest.mark.parametrize("path", pages(), ids=page_id)
def test_page_code_runs(path: Path, tmp_path: Path) -> None:
    script = page_script(extract_blocks(page_id(path), path.read_text("utf-8")))
    if not script.strip():
        return  # a page of prose (the reference pages, the architecture)
    env = dict(os.environ)
    # a page that forgets its fake server fails here instead of reaching a real provider
    env.update(OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="sk-docs-test-not-real")
    env["PYTHONPATH"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{page_id(path)}:\n{result.stderr[-4000:]}"


NOTE = re.compile(r"^\*On this page\b.*$", re.MULTILINE)
GET_STARTED = "[Get started]"


def page_note(text: str) -> str:
    """The page's italic note on its hidden setup ("*On this page, `server` is ...*")."""
    found = NOTE.search(text)
    return found.group(0) if found else ""


def names_the_note_gives(note: str) -> set[str]:
    """The names a reader is told the hidden setup makes: every identifier in backticks."""
    return {name for code in re.findall(r"`([^`]+)`", note) for name in re.findall(r"\w+", code)}


def names_shown_code_lacks(blocks: list[Block]) -> set[str]:
    """Names the page's shown code uses and never binds: a reader copying it needs them from
    elsewhere (the hidden setup, which the note must then name)."""
    shown = page_script([b for b in blocks if b.kind == "shown"])
    return {problem.split(" ")[0] for problem in names_used_before_defined(shown)}


def setup_beyond_get_started(blocks: list[Block]) -> list[str]:
    """What a page's hidden setup does differently from Get started's first block to the two
    things "as in Get started" promises: `server` (what its model answers) and `llm` (which
    model it names). Imports, scripted replies and stopping the server are the page's own."""
    text = (DOCS / "get-started.md").read_text("utf-8")
    first = next(b for b in extract_blocks("get-started.md", text) if b.kind == "shown")
    known = {ast.dump(stmt) for stmt in ast.parse(first.code).body}
    hidden = page_script([b for b in blocks if b.kind == "hidden"])

    def changes_server_or_llm(stmt: ast.stmt) -> bool:
        methods = {
            n.func.attr
            for n in ast.walk(stmt)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        }
        return bool(_bound(stmt) & {"server", "llm"}) or "respond_with" in methods

    return [
        ast.unparse(stmt).splitlines()[0]
        for stmt in ast.parse(hidden).body
        if ast.dump(stmt) not in known and changes_server_or_llm(stmt)
    ]


@pytest.mark.parametrize("path", pages(), ids=page_id)
def test_the_note_names_what_the_hidden_setup_gives_the_shown_code(path: Path) -> None:
    text = path.read_text("utf-8")
    lacking = names_shown_code_lacks(extract_blocks(page_id(path), text))
    assert lacking <= names_the_note_gives(page_note(text)), (
        "the shown code uses names that neither it nor the page's note provides: a reader "
        "copying it gets a NameError"
    )


@pytest.mark.parametrize("path", pages(), ids=page_id)
def test_a_setup_said_to_be_get_starteds_is_get_starteds(path: Path) -> None:
    text = path.read_text("utf-8")
    if GET_STARTED not in page_note(text):
        return
    assert setup_beyond_get_started(extract_blocks(page_id(path), text)) == []


# --- the reader's checks themselves


def test_blocks_are_classified_shown_hidden_and_skipped() -> None:
    text = "\n".join(
        [
            "Intro",
            "<!-- setup",
            "```python",
            "x = 1",
            "```",
            "-->",
            "```python",
            "print(x)",
            "```",
            "<!-- not-run: needs a real cluster -->",
            "```python",
            "ray.init()",
            "```",
            "```bash",
            "ls",
            "```",
            "- item",
            "",
            "    ```python",
            "    y = x",
            "    ```",
        ]
    )
    blocks = extract_blocks("p.md", text)
    assert [b.kind for b in blocks] == ["hidden", "shown", "skipped", "shown"]
    assert blocks[2].reason == "needs a real cluster"
    assert blocks[3].code == "y = x\n"
    assert "ray.init" not in page_script(blocks)


def test_a_name_used_before_it_is_defined_is_reported() -> None:
    script = "print(agent)\nagent = 1\n"
    assert names_used_before_defined(script) == ["agent (line 1)"]
    ok = "import json\n\ndef f():\n    return later\n\nlater = json.dumps([i for i in range(3)])\n"
    assert names_used_before_defined(ok) == []
    assert names_used_before_defined("@deco\ndef f():\n    pass\n") == ["deco (line 1)"]


def test_a_top_level_await_is_reported() -> None:
    assert top_level_awaits("x = await f()\n") == [1]
    assert top_level_awaits("async def main():\n    await f()\n") == []


def test_names_the_shown_code_lacks_are_found() -> None:
    blocks = extract_blocks(
        "p.md",
        "<!-- setup\n```python\nx = 1\nfrom m import Reply\n```\n-->\n"
        "```python\nprint(x, Reply)\ny = 2\nprint(y)\n```\n",
    )
    assert names_shown_code_lacks(blocks) == {"x", "Reply"}
    assert names_the_note_gives("*On this page, `x` and `Reply` (from `m`) are set up.*") >= {
        "x",
        "Reply",
    }


def test_a_setup_that_differs_from_get_starteds_is_reported() -> None:
    setup = (
        "<!-- setup\n```python\nfrom promptimus.testing import FakeOpenAIServer\n"
        "server = FakeOpenAIServer().start()\nserver.chat.respond_with(print)\n"
        "server.stop()\n```\n-->\n"
    )
    assert setup_beyond_get_started(extract_blocks("p.md", setup)) == [
        "server.chat.respond_with(print)"
    ]
