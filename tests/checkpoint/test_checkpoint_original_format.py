"""Two checkpoint formats told apart by a mark: files of promptimus 0.1 (unmarked) read as 0.1
read them, our marked files read exactly, and 0.1 still reads ours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import tomlkit
from locations import FIXTURES
from module_box import Box

from promptimus import Parameter, module_dict_from_toml_str, module_dict_to_toml_str
from promptimus.errors import CheckpointSyntaxError

FORMAT_MARK = "# promptimus checkpoint format=2"  # the on-disk mark: part of the file format
ORIGINAL = FIXTURES / "original"
# Written by `Module.save()` of promptimus 0.1.26 with tomlkit 0.15.2 (a blank line after every
# opening triple quote), and what 0.1.26's own reader returned for it (dumped as JSON).
WRITTEN_BY_0_1_26 = ORIGINAL / "written_by_0_1_26.toml"
AS_0_1_26_READ_IT = json.loads(
    (ORIGINAL / "written_by_0_1_26.read_by_0_1_26.json").read_text(encoding="utf-8")
)


def blank_tree(data: dict[str, Any]) -> Box:
    """A tree with the module dict's shape and every parameter unset."""
    root = Box()
    for name in data["params"]:
        setattr(root, name, Parameter())
    for name, sub in data["submodules"].items():
        setattr(root, name, blank_tree(sub))
    return root


# ---------------------------------------------------------------------------------- 0.1's files


def test_a_file_written_by_0_1_26_reads_as_0_1_26_read_it() -> None:
    text = WRITTEN_BY_0_1_26.read_text(encoding="utf-8")
    assert '"""\n\nYou are a librarian.' in text  # the fixture has tomlkit 0.15's extra newline
    assert module_dict_from_toml_str(text) == AS_0_1_26_READ_IT
    loaded = blank_tree(AS_0_1_26_READ_IT).load(WRITTEN_BY_0_1_26)
    assert loaded.serialize() == AS_0_1_26_READ_IT


def test_unmarked_strings_lose_newlines_at_both_ends_marked_ones_keep_them() -> None:
    body = 'p = """\n\n\nthree lines up\n\n"""\nq = "\\nescaped\\n"\nl = ["\\n", "x\\n"]\n'
    assert module_dict_from_toml_str(body)["params"] == {
        "p": "three lines up",
        "q": "escaped",
        "l": ["\n", "x\n"],  # 0.1 stripped top-level strings only
    }
    assert module_dict_from_toml_str(f"{FORMAT_MARK}\n{body}")["params"] == {
        "p": "\n\nthree lines up\n",
        "q": "\nescaped",
        "l": ["\n", "x\n"],
    }


def test_the_mark_may_follow_other_header_comments_but_not_a_key() -> None:
    value = 'p = """\n\nx\n"""\n'
    header = f"# my agent\n\n{FORMAT_MARK}\n# notes\n"
    assert module_dict_from_toml_str(header + value)["params"]["p"] == "\nx"
    assert module_dict_from_toml_str(f"a = 1\n{FORMAT_MARK}\n{value}")["params"]["p"] == "x"


def test_an_unknown_format_number_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.toml"
    path.write_text('# promptimus checkpoint format=3\np = "x"\n', encoding="utf-8")
    root = Box()
    root.p = Parameter("before")
    with pytest.raises(CheckpointSyntaxError, match=r"format=3.*Upgrade promptimus"):
        root.load(path)
    assert root.p.value == "before"


def test_each_referenced_toml_file_is_read_by_its_own_mark(tmp_path: Path) -> None:
    old = 'prompt = """\n\nYou are an analyst.\n"""\n'
    (tmp_path / "old.toml").write_text(old, encoding="utf-8")
    (tmp_path / "new.toml").write_text(f"{FORMAT_MARK}\n{old}", encoding="utf-8")
    (tmp_path / "note.md").write_text("\nA text file keeps its first newline.\n", encoding="utf-8")
    main = 'old = "${file:old.toml}"\nnew = "${file:new.toml}"\nnote = "${file:note.md}"\n'
    for text in (main, f"{FORMAT_MARK}\n{main}"):
        data = module_dict_from_toml_str(text, base_path=tmp_path)
        assert data["submodules"]["old"]["params"]["prompt"] == "You are an analyst."
        assert data["submodules"]["new"]["params"]["prompt"] == "\nYou are an analyst."
        assert data["params"]["note"] == "\nA text file keeps its first newline."


# ---------------------------------------------------------------------------------- our files


def test_saved_files_start_with_the_mark(tmp_path: Path) -> None:
    root = Box()
    root.p = Parameter("\nedge\n")
    root.save(tmp_path / "a.toml")
    text = (tmp_path / "a.toml").read_text(encoding="utf-8")
    assert text.startswith(FORMAT_MARK + "\n")
    again = Box()
    again.p = Parameter()
    assert again.load(tmp_path / "a.toml").p.value == "\nedge\n"


def test_module_dict_to_toml_str_marks_only_when_a_value_needs_it() -> None:
    plain = {"params": {"a": "no edge", "b": ["\n"], "c": 1}, "submodules": {}}
    edged = {"params": {"a": "x"}, "submodules": {"s": {"params": {"z": "y\n"}, "submodules": {}}}}
    assert FORMAT_MARK not in module_dict_to_toml_str(plain)
    assert module_dict_to_toml_str(edged).startswith(FORMAT_MARK + "\n")
    for data in (plain, edged):
        assert module_dict_from_toml_str(module_dict_to_toml_str(data)) == data


# ---------------------------------------------------------------------------------- 0.1 reads ours


def read_as_0_1(text: str) -> dict[str, Any]:
    """0.1's reading rule, restated for the test: tomlkit parses the file, comments are ignored,
    a table is a submodule, every other value a parameter, top-level strings lose edge newlines."""

    def walk(table: Any) -> dict[str, Any]:
        module: dict[str, Any] = {"params": {}, "submodules": {}}
        for name, value in table.items():
            if isinstance(value, dict):
                module["submodules"][name] = walk(value)
            else:
                module["params"][name] = value.strip("\n") if isinstance(value, str) else value
        return module

    return walk(tomlkit.parse(text).unwrap())


def tricky_tree() -> Box:
    root = Box()
    root.prompt = Parameter('Say """hi""" to C:\\path\\ and tab\there\x01\x7f 😀')
    root.multi = Parameter("line one\n\nline three")
    root.edge = Parameter("\nedges are 0.1's loss\n")
    root.numbers = Parameter([0.1, -0.0, 2**62, True, ["nested", "\r\n"]])
    root.big = Parameter(-(2**63))
    root.team = Box()
    root.team.member = Box()
    root.team.member.role = Parameter("system")
    return root


def expected_by_0_1(tree: Box) -> dict[str, Any]:
    data = tree.serialize()

    def strip(module: dict[str, Any]) -> dict[str, Any]:
        params = {
            k: v.strip("\n") if isinstance(v, str) else v for k, v in module["params"].items()
        }
        return {
            "params": params,
            "submodules": {k: strip(v) for k, v in module["submodules"].items()},
        }

    return strip(data)


def test_our_files_read_under_0_1s_rule_lose_only_edge_newlines() -> None:
    tree = tricky_tree()
    assert read_as_0_1(tree.describe()) == expected_by_0_1(tree)


ORIGINAL_PYTHON = os.environ.get("PROMPTIMUS_ORIGINAL_PYTHON")


@pytest.mark.skipif(
    not ORIGINAL_PYTHON,
    reason="set PROMPTIMUS_ORIGINAL_PYTHON to a Python with promptimus 0.1.26 installed",
)
def test_promptimus_0_1_loads_our_file(tmp_path: Path) -> None:
    # promptimus 0.1 shares our distribution name and needs Python >= 3.12, so it cannot live in
    # this environment; it runs in its own interpreter, e.g. a venv made with
    #   uv venv --python 3.12 /tmp/orig
    #   uv pip install --python /tmp/orig/bin/python promptimus==0.1.26
    tree = tricky_tree()
    tree.save(tmp_path / "ours.toml")
    script = textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        from promptimus import Module, Parameter

        class Box(Module):
            async def forward(self):
                return None

        def build(module):
            box = Box()
            for name in module["params"]:
                setattr(box, name, Parameter(None))
            for name, sub in module["submodules"].items():
                setattr(box, name, build(sub))
            return box

        shape = json.loads(Path(sys.argv[2]).read_text())
        loaded = build(shape).load(sys.argv[1])
        # 0.1 hands back tomlkit items (e.g. a tomlkit Bool inside an array): unwrap for JSON
        print(json.dumps(loaded.serialize(), default=lambda item: item.unwrap()))
        """
    )
    (tmp_path / "shape.json").write_text(json.dumps(tree.serialize()), encoding="utf-8")
    assert ORIGINAL_PYTHON is not None
    result = subprocess.run(
        [ORIGINAL_PYTHON, "-c", script, str(tmp_path / "ours.toml"), str(tmp_path / "shape.json")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == expected_by_0_1(tree)


def test_original_interpreter_is_really_the_original() -> None:
    if not ORIGINAL_PYTHON:
        pytest.skip("PROMPTIMUS_ORIGINAL_PYTHON not set")
    result = subprocess.run(
        [ORIGINAL_PYTHON, "-c", "import importlib.metadata as m; print(m.version('promptimus'))"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip().startswith("0.1."), (result.stdout, sys.executable)
