"""Saving over an existing checkpoint updates it in place: the user's comments, blank lines and
key order survive, values stay exact, new keys are added and removed ones dropped."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from exact_values import same
from hypothesis import given, settings
from hypothesis import strategies as st
from locations import FIXTURES
from module_box import Box

from promptimus import Module, ModuleDict, Parameter, module_dict_from_toml_str
from promptimus.errors import CheckpointSyntaxError, InvalidParameterValue

FORMAT_MARK = "# promptimus checkpoint format=2"  # the on-disk mark: part of the file format
ORIGINAL = FIXTURES / "original"
AS_0_1_26_READ_IT = json.loads(
    (ORIGINAL / "written_by_0_1_26.read_by_0_1_26.json").read_text(encoding="utf-8")
)


def agent() -> Box:
    root = Box()
    root.prompt = Parameter("You are a helpful assistant.")
    root.role = Parameter("system")
    root.temperature = Parameter(0.7)
    root.memory = Box()
    root.memory.size = Parameter(5)
    root.tools = ModuleDict({"web search": Box()})
    root.tools["web search"].query = Parameter("Search for {q}.")
    return root


HAND_EDITED = f'''\
{FORMAT_MARK}
# Support agent. Owner: docs team.

# tuned for gpt-4o, see PR 12
prompt = """
You are a helpful assistant.
"""

temperature = 0.7  # lower is duller
role = "system"


# how much history to keep
[memory]
size = 5   # messages

[tools]

[tools."web search"]
query = """
Search for {{q}}.
"""
# end of file
'''


def blank_tree(data: dict[str, Any]) -> Box:
    root = Box()
    for name in data["params"]:
        setattr(root, name, Parameter())
    for name, sub in data["submodules"].items():
        setattr(root, name, blank_tree(sub))
    return root


def reload(path: Path, like: Box) -> Box:
    fresh = Box()
    for name in like._parameters:
        setattr(fresh, name, Parameter())
    for name, child in like._submodules.items():
        setattr(fresh, name, reload_shape(child))
    return fresh.load(path)


def reload_shape(module: Module) -> Module:
    fresh: Module = ModuleDict({}) if isinstance(module, ModuleDict) else Box()
    for name in module._parameters:
        setattr(fresh, name, Parameter())
    for name, child in module._submodules.items():
        if isinstance(fresh, ModuleDict):
            fresh[name] = reload_shape(child)
        else:
            setattr(fresh, name, reload_shape(child))
    return fresh


def test_comments_blank_lines_and_key_order_survive_a_save(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(HAND_EDITED, encoding="utf-8")
    tree = agent()
    tree.prompt.value = "You are a terse assistant.\nAnswer in one line."
    tree.memory.size.value = 8
    tree.save(path)
    text = path.read_text(encoding="utf-8")
    expected = HAND_EDITED.replace(
        "You are a helpful assistant.\n", "You are a terse assistant.\nAnswer in one line.\n"
    ).replace("size = 5   # messages", "size = 8   # messages")
    assert text == expected
    assert reload(path, tree).state_dict() == tree.state_dict()


def test_unchanged_save_rewrites_nothing(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(HAND_EDITED, encoding="utf-8")
    agent().save(path)
    assert path.read_text(encoding="utf-8") == HAND_EDITED


def test_new_parameters_are_added_removed_ones_dropped(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(HAND_EDITED, encoding="utf-8")
    tree = agent()
    del tree.temperature
    tree.stops = Parameter(["END"])
    tree.memory.policy = Parameter("fifo")
    tree.tools["calculator"] = Box()
    tree.tools["calculator"].precision = Parameter(4)
    tree.planner = Box()
    tree.planner.plan = Parameter("\nthink first\n")
    tree.save(path)
    text = path.read_text(encoding="utf-8")
    assert "temperature" not in text and "# lower is duller" not in text
    for comment in ("# tuned for gpt-4o, see PR 12", "# how much history to keep", "# messages"):
        assert comment in text
    # new parameters follow the last parameter of their table, new tables come last
    assert text.index('role = "system"') < text.index("stops") < text.index("[memory]")
    assert text.index("size = 5") < text.index("policy") < text.index("[tools]")
    assert text.index('[tools."web search"]') < text.index("[tools.calculator]")
    assert text.index("[tools.calculator]") < text.index("[planner]")
    loaded = reload(path, tree)
    assert loaded.state_dict() == tree.state_dict()
    assert loaded.planner.plan.value == "\nthink first\n"


def test_a_parameter_can_become_a_submodule_and_back(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(HAND_EDITED, encoding="utf-8")
    tree = agent()
    del tree.role
    tree.role = Box()
    tree.role.name = Parameter("system")
    del tree.memory
    tree.memory = Parameter(5)
    tree.save(path)
    assert reload(path, tree).state_dict() == tree.state_dict()


def test_a_0_1_file_saved_in_place_gets_the_mark_and_stays_exact(tmp_path: Path) -> None:
    path = tmp_path / "library.toml"
    shutil.copy(ORIGINAL / "written_by_0_1_26.toml", path)
    tree = blank_tree(AS_0_1_26_READ_IT).load(path)
    assert tree.serialize() == AS_0_1_26_READ_IT
    tree.desk.script.value = "\nSay hello, then wait.\n"
    tree.save(path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith(FORMAT_MARK + "\n")
    assert text.index("[catalog]") < text.index("[catalog.ranker]") < text.index("[desk]")
    again = blank_tree(AS_0_1_26_READ_IT).load(path)
    assert again.state_dict() == tree.state_dict()
    assert again.desk.script.value == "\nSay hello, then wait.\n"


def test_references_stay_while_they_hold_and_are_inlined_when_values_change(
    tmp_path: Path,
) -> None:
    (tmp_path / "lead.toml").write_text('prompt = "You lead."\n', encoding="utf-8")
    (tmp_path / "intro.md").write_text("Hello there.\n", encoding="utf-8")
    main = tmp_path / "main.toml"
    main.write_text(
        '# composed\nintro = "${file:intro.md}"\nlead = "${file:lead.toml}"\n', encoding="utf-8"
    )
    tree = Box()
    tree.intro = Parameter()
    tree.lead = Box()
    tree.lead.prompt = Parameter()
    tree.load(main)
    tree.save(main)
    text = main.read_text(encoding="utf-8")
    assert '"${file:intro.md}"' in text and '"${file:lead.toml}"' in text
    tree.lead.prompt.value = "You lead the team."
    tree.intro.value = "Hi."
    tree.save(main)
    text = main.read_text(encoding="utf-8")
    assert "${file:" not in text and "# composed" in text
    assert (tmp_path / "lead.toml").read_text(encoding="utf-8") == 'prompt = "You lead."\n'
    again = Box()
    again.intro, again.lead = Parameter(), Box()
    again.lead.prompt = Parameter()
    assert again.load(main).state_dict() == tree.state_dict()


@pytest.mark.parametrize(
    "content",
    [
        b"<<<<<<< HEAD\nprompt = 'a'\n=======\nprompt = 'b'\n>>>>>>> theirs\n",
        b"prompt = \xff\xfe\n",
    ],
    ids=["merge-conflict", "not-utf8"],
)
def test_an_existing_file_that_is_not_toml_is_left_alone(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "agent.toml"
    path.write_bytes(content)
    tree = agent()
    with pytest.raises(CheckpointSyntaxError, match=r"keep_comments=False"):
        tree.save(path)
    assert path.read_bytes() == content
    assert sorted(p.name for p in tmp_path.iterdir()) == ["agent.toml"]
    tree.save(path, keep_comments=False)
    assert path.read_text(encoding="utf-8") == tree.describe()


def test_keep_comments_false_writes_a_fresh_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(HAND_EDITED, encoding="utf-8")
    agent().save(path, keep_comments=False)
    assert path.read_text(encoding="utf-8") == agent().describe()


def test_an_unsaveable_value_leaves_the_hand_edited_file_untouched(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text(HAND_EDITED, encoding="utf-8")
    tree = agent()
    tree.planner = Box()
    tree.planner.bad = Parameter("x")
    tree.planner.bad._value = {"not": "allowed"}  # bypasses the setter's validation
    with pytest.raises(InvalidParameterValue, match=r"planner\.bad"):
        tree.save(path)
    assert path.read_text(encoding="utf-8") == HAND_EDITED


def test_an_empty_existing_file_gets_the_fresh_layout(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text("\n", encoding="utf-8")
    agent().save(path)
    assert path.read_text(encoding="utf-8") == agent().describe()


# ---------------------------------------------------------------------------------- property


edge_text = st.sampled_from(
    ["", "\n", "\nlead", "trail\n", '"""', "a\\", "\r\n", "${file:x.toml}", "$${pkg:a.b}", "# not"]
)
scalars = st.one_of(
    st.text(max_size=20),
    edge_text,
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.booleans(),
)
values = st.recursive(scalars, lambda c: st.lists(c, max_size=3), max_leaves=6)
# not a name the Module class already uses (llm, path, forward, ...): those cannot be parameters
names = st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True).filter(
    lambda name: not hasattr(Box, name)
)
params = st.dictionaries(names, values, max_size=5)
# None deletes the parameter, anything else sets it (a new one if the name is new)
changes = st.dictionaries(names, st.one_of(st.none(), values), max_size=5)
comment_text = st.text(
    st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\u2028\u2029\x85"),
    max_size=15,
)


def build(root_params: dict[str, Any], child_params: dict[str, Any]) -> Box:
    root = Box()
    for name, value in root_params.items():
        setattr(root, name, Parameter(value))
    root.child = Box()
    for name, value in child_params.items():
        setattr(root.child, name, Parameter(value))
    return root


def applied(base: dict[str, Any], edit: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for name, value in edit.items():
        if value is None:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def commented(text: str, notes: list[str]) -> tuple[str, list[str], dict[str, str]]:
    """Hand-edit a file we wrote: a comment line above every key and table header, a comment
    after every value. Returns the text, the comment lines in order, and each key's (as
    `table.key`) end-of-value comment."""
    out: list[str] = []
    above: list[str] = []
    after: dict[str, str] = {}
    table, key, in_string = "", "", False
    for line in text.split("\n"):
        starts = not in_string and (" = " in line or line.startswith("["))
        if starts:
            note = f"# above {len(above)}: {notes[len(above) % len(notes)]}".rstrip()
            above.append(note)
            out.append(note)
            if line.startswith("["):
                table = line.strip("[]")
            else:
                key = f"{table}.{line.split(' = ', 1)[0]}"
        out.append(line)
        if starts and line.endswith('= """'):
            in_string = True
        elif (in_string and line == '"""') or (starts and not line.startswith("[")):
            in_string = False
            after[key] = f"# after {len(after)}."
            out[-1] = f"{line}  {after[key]}"
    return "\n".join(out), above, after


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


@settings(max_examples=120, deadline=None)
@given(
    root=params,
    child=params,
    root_edit=changes,
    child_edit=changes,
    notes=st.lists(comment_text, min_size=1, max_size=4),
)
def test_in_place_saves_keep_comments_and_values_exact(
    folder: Path,
    root: dict[str, Any],
    child: dict[str, Any],
    root_edit: dict[str, Any],
    child_edit: dict[str, Any],
    notes: list[str],
) -> None:
    path = folder / "tree.toml"
    path.unlink(missing_ok=True)
    build(root, child).save(path)
    text, above, after = commented(path.read_text(encoding="utf-8"), notes)
    path.write_text(text, encoding="utf-8")

    edited = build(applied(root, root_edit), applied(child, child_edit))
    edited.save(path)
    saved = path.read_text(encoding="utf-8")

    assert saved.startswith(FORMAT_MARK)
    for note in above:  # comment lines stay, in their order
        assert note in saved
    positions = [saved.index(note) for note in above]
    assert positions == sorted(positions)
    loaded = reload(path, edited)
    left, right = loaded.state_dict(), edited.state_dict()
    assert sorted(left) == sorted(right)
    for key in right:
        assert same(left[key], right[key]), key
    # a key that stays keeps the comment after its value, even when the value changed
    final = {f".{k}" for k in applied(root, root_edit)} | {
        f"child.{k}" for k in applied(child, child_edit)
    }
    for key, note in after.items():
        assert (note in saved) == (key in final), key
    # saving again changes nothing: the update is a fixed point
    edited.save(path)
    assert path.read_text(encoding="utf-8") == saved


def test_a_file_of_an_unknown_format_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    content = '# promptimus checkpoint format=3\nprompt = "from the future"\n'
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CheckpointSyntaxError, match=r"format=3.*keep_comments=False"):
        agent().save(path)
    assert path.read_text(encoding="utf-8") == content


def test_an_unchanged_0_1_file_only_gains_the_mark(tmp_path: Path) -> None:
    # 0.1 (before tomlkit 0.15) wrote no blank line after the opening quotes: every value reads
    # the same under both rules, so the file is kept byte for byte under the mark
    path = tmp_path / "library.toml"
    shutil.copy(ORIGINAL / "library.toml", path)
    before = path.read_text(encoding="utf-8")
    data = module_dict_from_toml_str(before)
    tree = blank_tree(data).load(path)
    tree.save(path)
    assert path.read_text(encoding="utf-8") == f"{FORMAT_MARK}\n{before}"
    assert blank_tree(data).load(path).state_dict() == tree.state_dict()
