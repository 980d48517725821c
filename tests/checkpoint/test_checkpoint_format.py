"""The checkpoint text: layout, compatibility with the original promptimus, atomic UTF-8 saves."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
from locations import FIXTURES
from module_box import Box

from promptimus import (
    Module,
    ModuleDict,
    Parameter,
    module_dict_from_toml_str,
    module_dict_to_toml_str,
)
from promptimus.errors import CheckpointMismatch, InvalidParameterValue

ORIGINAL = FIXTURES / "original"


class Prompt(Module):
    def __init__(self, prompt: str | None = None, role: str | None = None) -> None:
        super().__init__()
        self.prompt = Parameter(prompt)
        self.role = Parameter(role)

    async def forward(self) -> None:
        return None


class Memory(Module):
    def __init__(self) -> None:
        super().__init__()
        self.memory_size = Parameter(0)
        self.prompt = Prompt()

    async def forward(self) -> None:
        return None


class Agent(Module):
    def __init__(self) -> None:
        super().__init__()
        self.prompt = Parameter("")
        self.role = Parameter("")
        self.memory = Memory()

    async def forward(self) -> None:
        return None


def small_tree() -> Box:
    root = Box()
    root.memory = Box()  # a submodule first: params are still written before tables
    root.prompt = Parameter('Hi\n"quoted"')
    root.temperature = Parameter(0.7)
    root.retries = Parameter(3)
    root.stream = Parameter(False)
    root.stops = Parameter(["\n", "END", 2, [1.5, True]])
    root.memory.size = Parameter(5)
    root.memory.inner = Box()
    root.memory.inner.role = Parameter("system")
    root.tools = ModuleDict({"web search": Box()})
    root.tools["web search"].q = Parameter("x")
    root.unset = Parameter()
    return root


SMALL_TREE_TEXT = '''\
# promptimus checkpoint format=2

prompt = """
Hi
"quoted"
"""

temperature = 0.7

retries = 3

stream = false

stops = ["\\n", "END", 2, [1.5, true]]


[memory]
size = 5


[memory.inner]
role = """
system
"""


[tools]

[tools."web search"]
q = """
x
"""
'''


# ---------------------------------------------------------------------------------- layout


def test_exact_text_of_a_small_tree() -> None:
    assert small_tree().describe() == SMALL_TREE_TEXT


def test_save_writes_what_describe_returns(tmp_path: Path) -> None:
    target = tmp_path / "tree.toml"
    tree = small_tree()
    assert tree.save(target) is tree
    assert target.read_bytes() == SMALL_TREE_TEXT.encode("utf-8")


def test_describe_is_valid_toml_with_the_same_structure() -> None:
    parsed = tomllib.loads(small_tree().describe())
    assert list(parsed) == [
        "prompt",
        "temperature",
        "retries",
        "stream",
        "stops",
        "memory",
        "tools",
    ]
    assert parsed["memory"]["size"] == 5
    assert list(parsed["tools"]) == ["web search"]
    assert parsed["stops"] == ["\n", "END", 2, [1.5, True]]


def test_parameters_keep_registration_order_not_alphabetical() -> None:
    root = Box()
    root.zulu = Parameter(1)
    root.alpha = Parameter(2)
    root.mike = Box()
    root.bravo = Box()
    text = root.describe()
    assert text.index("zulu") < text.index("alpha") < text.index("[mike]") < text.index("[bravo]")


def test_module_dict_round_trip_through_text() -> None:
    data = small_tree().serialize()
    assert module_dict_from_toml_str(module_dict_to_toml_str(data)) == data


@pytest.mark.parametrize("key", ["a b", "ключ", 'q"uote', "back\\slash", "1", "tab\there"])
def test_keys_that_are_not_bare_are_quoted(key: str) -> None:
    root = Box()
    root.items = ModuleDict({key: Box()})
    root.items[key].p = Parameter(key)
    text = root.describe()
    assert module_dict_from_toml_str(text) == root.serialize()


def test_reference_lookalike_is_escaped_and_read_back_literally() -> None:
    data = {"params": {"p": "${file:x.toml}", "q": "$${pkg:a.b.c}"}, "submodules": {}}
    text = module_dict_to_toml_str(data)
    assert '"""\n$${file:x.toml}\n"""' in text
    assert module_dict_from_toml_str(text) == data


def test_empty_tree_is_empty_text() -> None:
    assert Box().describe() == "# promptimus checkpoint format=2\n"
    assert module_dict_to_toml_str({"params": {}, "submodules": {}}) == ""
    assert module_dict_from_toml_str("") == {"params": {}, "submodules": {}}


class OddFloat(float):
    """Like numpy.float64: a float subclass whose repr is not a TOML float."""

    def __repr__(self) -> str:
        return f"OddFloat({float(self)!r})"


class OddInt(int):
    def __repr__(self) -> str:
        return f"OddInt({int(self)})"

    __str__ = __repr__


def test_number_subclasses_are_written_as_plain_numbers() -> None:
    root = Box()
    root.f = Parameter(OddFloat(0.5))
    root.i = Parameter(OddInt(3))
    root.mixed = Parameter([OddFloat(-0.0), OddInt(-7)])
    text = root.describe()
    assert text == "# promptimus checkpoint format=2\n\nf = 0.5\n\ni = 3\n\nmixed = [-0.0, -7]\n"
    plain = Box()
    plain.f, plain.i, plain.mixed = Parameter(0.5), Parameter(3), Parameter([-0.0, -7])
    assert root.digest() == plain.digest()
    loaded = Box()
    loaded.f, loaded.i, loaded.mixed = Parameter(), Parameter(), Parameter()
    loaded.load_dict(module_dict_from_toml_str(text))
    assert loaded.digest() == root.digest()


def test_writer_refuses_values_a_checkpoint_cannot_hold() -> None:
    with pytest.raises(InvalidParameterValue, match=r"sub\.bad"):
        module_dict_to_toml_str(
            {"params": {}, "submodules": {"sub": {"params": {"bad": (1, 2)}, "submodules": {}}}}
        )
    with pytest.raises(CheckpointMismatch, match="params"):
        module_dict_to_toml_str({"params": {}, "submodules": {}, "extra": 1})


# ---------------------------------------------------------------------------------- the original


def test_original_agent_checkpoint_loads() -> None:
    agent = Agent()
    agent.load(ORIGINAL / "agent.toml")
    # TOML drops the newline after the opening quotes; the one before the closing quotes is
    # layout too (the original promptimus stripped it on reading, and so do we).
    assert agent.prompt.value == "You are a helpful assistant.\nAnswer briefly."
    assert agent.role.value == "system"
    assert agent.memory.memory_size.value == 5
    assert agent.memory.prompt.prompt.value == "You are..."
    assert agent.memory.prompt.role.value == "system"


def test_original_writer_layout_is_reproduced_byte_for_byte() -> None:
    text = (ORIGINAL / "library.toml").read_text(encoding="utf-8")
    data = module_dict_from_toml_str(text)
    assert data["params"]["greeting"] == 'Welcome! Ask me about "any" book.'
    ranker = data["submodules"]["catalog"]["submodules"]["ranker"]
    assert ranker["params"]["instructions"] == "Rank by relevance.\nPrefer recent editions."
    assert module_dict_to_toml_str(data) == text


def test_original_reference_fixture_resolves() -> None:
    data = module_dict_from_toml_str(
        (ORIGINAL / "team.toml").read_text(encoding="utf-8"), base_path=ORIGINAL
    )
    assert data["submodules"]["lead"] == {
        "params": {"prompt": "You are an analyst.", "role": "system"},
        "submodules": {},
    }
    assert data["submodules"]["helper"]["params"]["role"] == "assistant"


# ---------------------------------------------------------------------------------- atomic save


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("target", ["os.replace", "os.fsync"])
def test_failed_save_keeps_the_previous_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    path = tmp_path / "ckpt.toml"
    tree = small_tree()
    tree.save(path)
    before = path.read_bytes()
    tree.prompt.value = "changed"

    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(target, fail)
    with pytest.raises(OSError, match="disk on fire"):
        tree.save(path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert leftovers(tmp_path) == ["ckpt.toml"]


def test_failed_first_save_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError("no")

    monkeypatch.setattr("os.replace", fail)
    with pytest.raises(OSError):
        small_tree().save(tmp_path / "new.toml")
    assert leftovers(tmp_path) == []


def test_unserialisable_value_keeps_the_previous_file(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.toml"
    tree = small_tree()
    tree.save(path)
    before = path.read_bytes()
    tree.memory.size._value = {"not": "allowed"}  # bypasses the setter's validation
    with pytest.raises(InvalidParameterValue, match=r"memory\.size"):
        tree.save(path)
    assert path.read_bytes() == before
    assert leftovers(tmp_path) == ["ckpt.toml"]


def test_save_keeps_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.toml"
    small_tree().save(path)
    os.chmod(path, 0o640)
    small_tree().save(path)
    assert path.stat().st_mode & 0o777 == 0o640


def test_files_are_utf8_under_an_ascii_c_locale(tmp_path: Path) -> None:
    # A real ASCII locale in a child interpreter: any text-mode I/O without an explicit encoding
    # would fail (or write something other than UTF-8) there.
    script = tmp_path / "roundtrip.py"
    script.write_text(
        textwrap.dedent(
            """
            import locale, sys
            from promptimus import Module, Parameter

            class Box(Module):
                async def forward(self):
                    return None

            assert locale.getpreferredencoding(False).lower() in {"ascii", "ansi_x3.4-1968"}
            root = Box()
            root.text = Parameter("h\\u00e9llo \\u2713 \\U0001F600")
            root.save(sys.argv[1])
            again = Box()
            again.text = Parameter()
            again.load(sys.argv[1])
            assert again.text.value == root.text.value
            """
        ),
        encoding="utf-8",
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "LC_ALL": "C",
        "LANG": "C",
        "PYTHONCOERCECLOCALE": "0",
        "PYTHONUTF8": "0",
    }
    target = tmp_path / "ascii-locale.toml"
    result = subprocess.run(
        [sys.executable, str(script), str(target)], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "héllo ✓ 😀" in target.read_bytes().decode("utf-8")
