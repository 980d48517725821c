"""Loading checkpoints: validation first, then all or nothing; `${file:}` / `${pkg:}` references."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from module_box import Box

from promptimus import Module, Parameter, module_dict_from_toml_str
from promptimus.checkpoint import UNSET, plan_load
from promptimus.errors import (
    CheckpointError,
    CheckpointMismatch,
    CheckpointReferenceError,
    CheckpointSyntaxError,
    UnsafeReference,
)


class Prompt(Module):
    def __init__(self, prompt: str = "default prompt", role: str = "system") -> None:
        super().__init__()
        self.prompt = Parameter(prompt)
        self.role = Parameter(role)

    async def forward(self) -> None:
        return None


class Agent(Module):
    def __init__(self) -> None:
        super().__init__()
        self.name_ = Parameter("agent")
        self.temperature = Parameter(0.5)
        self.max_steps = Parameter(3)
        self.verbose = Parameter(False)
        self.stops = Parameter(["END"])
        self.lead = Prompt()
        self.helper = Prompt("help", "assistant")

    async def forward(self) -> None:
        return None


GOOD = '''\
name_ = """
loaded
"""

temperature = 0.25

max_steps = 7

verbose = true

stops = ["STOP", "\\n"]


[lead]
prompt = """
Lead the team.
"""

role = """
system
"""


[helper]
prompt = """
Help the lead.
"""

role = """
assistant
"""
'''


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def assert_untouched(agent: Agent, attempt: Any, error: type[Exception], match: str) -> None:
    state, digest = agent.state_dict(), agent.digest()
    with pytest.raises(error, match=match):
        attempt()
    assert agent.state_dict() == state
    assert agent.digest() == digest


# ---------------------------------------------------------------------------------- happy path


def test_load_applies_every_value(tmp_path: Path) -> None:
    agent = Agent()
    assert agent.load(write(tmp_path, "a.toml", GOOD)) is agent
    assert agent.state_dict() == {
        "name_": "loaded",
        "temperature": 0.25,
        "max_steps": 7,
        "verbose": True,
        "stops": ["STOP", "\n"],
        "lead.prompt": "Lead the team.",
        "lead.role": "system",
        "helper.prompt": "Help the lead.",
        "helper.role": "assistant",
    }


def test_int_into_a_float_parameter_becomes_a_float(tmp_path: Path) -> None:
    agent = Agent()
    agent.load(write(tmp_path, "a.toml", GOOD.replace("temperature = 0.25", "temperature = 1")))
    assert agent.temperature.value == 1.0
    assert isinstance(agent.temperature.value, float)
    expected = Agent().load_dict(module_dict_from_toml_str(GOOD))
    expected.temperature.value = 1.0
    assert agent.digest() == expected.digest()


def test_unset_parameter_accepts_any_checkpoint_value() -> None:
    box = Box()
    box.anything = Parameter()
    box.load_dict({"params": {"anything": [1, "two"]}, "submodules": {}})
    assert box.anything.value == [1, "two"]


def test_load_into_unset_parameters_is_not_missing() -> None:
    box = Box()
    box.later = Parameter()
    box.load_dict({"params": {}, "submodules": {}})  # strict, yet nothing is missing
    assert not box.later.is_set


# ---------------------------------------------------------------------------------- strictness


def test_strict_load_names_unknown_and_missing_keys(tmp_path: Path) -> None:
    text = GOOD.replace("max_steps = 7\n", "").replace("[helper]", "[helper]\nextra = 1")
    text += '\n[ghost]\nx = "boo"\n'
    path = write(tmp_path, "a.toml", text)
    agent = Agent()
    state = agent.state_dict()
    with pytest.raises(CheckpointMismatch) as info:
        agent.load(path)
    message = str(info.value)
    for key in ("max_steps", "helper.extra", "ghost"):
        assert key in message
    assert "strict=False" in message
    assert agent.state_dict() == state


def test_non_strict_load_skips_unknown_and_missing(tmp_path: Path) -> None:
    text = GOOD.replace("max_steps = 7\n", "").replace("[helper]", "[helper]\nextra = 1")
    text += '\n[ghost]\nx = "boo"\n'
    agent = Agent()
    agent.load(write(tmp_path, "a.toml", text), strict=False)
    assert agent.max_steps.value == 3  # kept
    assert agent.helper.prompt.value == "Help the lead."
    assert agent.name_.value == "loaded"


def test_missing_submodule_table_is_reported_per_key() -> None:
    agent = Agent()
    data = module_dict_from_toml_str(GOOD)
    del data["submodules"]["helper"]
    with pytest.raises(CheckpointMismatch, match=r"root\.helper\.prompt, root\.helper\.role"):
        agent.load_dict(data)


# ---------------------------------------------------------------------------------- bad values


LEAD_TABLE = GOOD[GOOD.index("[lead]") : GOOD.index("[helper]")]
NAME_LINE = 'name_ = """\nloaded\n"""\n'


@pytest.mark.parametrize(
    ("old", "new", "match"),
    [
        ("max_steps = 7", 'max_steps = "seven"', "max_steps"),
        ("max_steps = 7", "max_steps = 7.5", "max_steps"),
        ("verbose = true", "verbose = 1", "verbose"),
        ("temperature = 0.25", "temperature = true", "temperature"),
        ('stops = ["STOP", "\\n"]', "stops = 1", "stops"),
        ('stops = ["STOP", "\\n"]', "stops = [{b = 1}]", "stops"),
        ("max_steps = 7", "max_steps = 1979-05-27T07:32:00Z", "datetime"),
        ("max_steps = 7", "max_steps = [1979-05-27]", "date"),
        (LEAD_TABLE, "", "lead"),  # with the next case: a value where a submodule is
        (NAME_LINE, "", "name_"),  # with the next case: a table where a parameter is
    ],
)
def test_wrong_kind_of_value_is_refused_and_nothing_changes(
    tmp_path: Path, old: str, new: str, match: str
) -> None:
    assert old in GOOD
    text = GOOD.replace(old, new, 1)
    if old == LEAD_TABLE:
        text = "lead = 1\n" + text
    if old == NAME_LINE:
        text += "\n[name_]\nx = 1\n"
    path = write(tmp_path, "a.toml", text)
    agent = Agent()
    assert_untouched(agent, lambda: agent.load(path), CheckpointMismatch, match)
    assert_untouched(agent, lambda: agent.load(path, strict=False), CheckpointMismatch, match)


def test_array_of_tables_is_not_a_submodule(tmp_path: Path) -> None:
    text = GOOD.replace("[lead]", "[[lead]]")
    agent = Agent()
    path = write(tmp_path, "a.toml", text)
    assert_untouched(agent, lambda: agent.load(path), CheckpointMismatch, "lead")


def test_every_problem_is_listed_at_once(tmp_path: Path) -> None:
    text = GOOD.replace("max_steps = 7", 'max_steps = "x"').replace("verbose = true", "verbose = 2")
    agent = Agent()
    with pytest.raises(CheckpointMismatch) as info:
        agent.load(write(tmp_path, "a.toml", text))
    assert "max_steps" in str(info.value) and "verbose" in str(info.value)


def test_load_dict_refuses_malformed_module_dicts() -> None:
    agent = Agent()
    good = module_dict_from_toml_str(GOOD)
    for bad in (
        {"params": [], "submodules": {}},
        {**good, "other": {}},
        {"params": {**good["params"], "name_": None}, "submodules": good["submodules"]},
        {"params": good["params"], "submodules": {**good["submodules"], "lead": "text"}},
    ):
        assert_untouched(agent, lambda bad=bad: agent.load_dict(bad), CheckpointMismatch, ".")
    with pytest.raises(CheckpointMismatch):
        agent.load_dict([])  # type: ignore[arg-type]


def test_valid_values_are_not_applied_when_a_later_one_is_bad(tmp_path: Path) -> None:
    # the bad value comes last in the file: everything before it must stay unloaded too
    text = GOOD.replace('role = """\nassistant\n"""', "role = 5")
    agent = Agent()
    assert_untouched(
        agent, lambda: agent.load(write(tmp_path, "a.toml", text)), CheckpointMismatch, "role"
    )
    assert agent.name_.value == "agent"


# ---------------------------------------------------------------------------------- syntax


def test_malformed_toml_names_the_line(tmp_path: Path) -> None:
    text = 'name_ = """\nok\n"""\n\nmax_steps = = 3\n'
    agent = Agent()
    path = write(tmp_path, "broken.toml", text)
    assert_untouched(agent, lambda: agent.load(path), CheckpointSyntaxError, r"line 5")
    with pytest.raises(CheckpointSyntaxError, match=r"broken\.toml"):
        agent.load(path)
    with pytest.raises(CheckpointSyntaxError, match="line 2"):
        module_dict_from_toml_str('a = 1\nb = "unclosed\nc = 3\n')


def test_integer_beyond_the_digit_limit_is_a_syntax_error() -> None:
    with pytest.raises(CheckpointSyntaxError, match="integer"):
        module_dict_from_toml_str("x = " + "9" * 5000 + "\n")


def test_non_utf8_file_is_a_syntax_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes('name_ = "caf\xe9"\n'.encode("latin-1"))
    agent = Agent()
    assert_untouched(agent, lambda: agent.load(path), CheckpointSyntaxError, "UTF-8")


def test_missing_file_is_a_checkpoint_error(tmp_path: Path) -> None:
    agent = Agent()
    assert_untouched(
        agent, lambda: agent.load(tmp_path / "nope.toml"), CheckpointError, "nope.toml"
    )


def test_crlf_files_load(tmp_path: Path) -> None:
    path = tmp_path / "crlf.toml"
    path.write_bytes(GOOD.replace("\n", "\r\n").encode("utf-8"))
    agent = Agent()
    agent.load(path)
    assert agent.lead.prompt.value == "Lead the team."
    assert agent.stops.value == ["STOP", "\n"]


# ---------------------------------------------------------------------------------- diamonds


def diamond() -> Box:
    root = Box()
    shared = Prompt()
    root.a, root.b = Box(), Box()
    root.a.p = shared
    root.b.p = shared
    return root


def test_diamond_with_equal_values_loads() -> None:
    root = diamond()
    state = root.state_dict()
    state["a.p.prompt"] = state["b.p.prompt"] = "same"
    root.load_state_dict(state)
    assert root.a.p.prompt.value == "same"


def test_diamond_with_two_values_is_refused() -> None:
    root = diamond()
    state, digest = root.state_dict(), root.digest()
    conflicting = dict(state, **{"a.p.prompt": "one", "b.p.prompt": "two"})
    with pytest.raises(CheckpointMismatch, match=r"a\.p\.prompt"):
        root.load_state_dict(conflicting)
    text = root.describe().replace("default prompt", "other", 1)
    with pytest.raises(CheckpointMismatch, match="different values"):
        root.load_dict(module_dict_from_toml_str(text))
    assert root.state_dict() == state and root.digest() == digest


def test_diamond_checkpoint_round_trips(tmp_path: Path) -> None:
    root = diamond()
    root.a.p.prompt.value = "shared text"
    root.save(tmp_path / "d.toml")
    fresh = diamond()
    fresh.load(tmp_path / "d.toml")
    assert fresh.b.p.prompt.value == "shared text"


# ---------------------------------------------------------------------------------- references


def test_file_reference_to_a_toml_submodule(tmp_path: Path) -> None:
    write(tmp_path, "lead.toml", 'prompt = """\nFrom a file.\n"""\nrole = "system"\n')
    main = write(tmp_path, "main.toml", GOOD.replace(LEAD_TABLE, ""))
    write(tmp_path, "main.toml", 'lead = "${file:lead.toml}"\n' + main.read_text(encoding="utf-8"))
    agent = Agent()
    agent.load(main)
    assert agent.lead.prompt.value == "From a file."
    assert agent.lead.role.value == "system"
    assert agent.helper.prompt.value == "Help the lead."


def test_file_reference_to_a_text_file(tmp_path: Path) -> None:
    write(tmp_path, "prompts/lead.md", "You lead.\nBe brief.\n")
    write(tmp_path, "main.toml", 'prompt = "${file:prompts/lead.md}"\nrole = "system"\n')
    lead = Prompt()
    lead.load(tmp_path / "main.toml")
    assert lead.prompt.value == "You lead.\nBe brief."  # the file's final newline is dropped


def test_file_reference_in_multiline_layout(tmp_path: Path) -> None:
    write(tmp_path, "p.md", "text")
    write(tmp_path, "main.toml", 'prompt = """\n${file:p.md}\n"""\nrole = "x"\n')
    lead = Prompt()
    lead.load(tmp_path / "main.toml")
    assert lead.prompt.value == "text"


def test_nested_references_resolve_relative_to_their_file(tmp_path: Path) -> None:
    write(tmp_path, "parts/deep/prompt.md", "Deep prompt.")
    write(tmp_path, "parts/lead.toml", 'prompt = "${file:deep/prompt.md}"\nrole = "system"\n')
    write(tmp_path, "main.toml", 'lead = "${file:parts/lead.toml}"\n')
    root = Box()
    root.lead = Prompt()
    root.load(tmp_path / "main.toml")
    assert root.lead.prompt.value == "Deep prompt."


def test_references_are_inlined_on_save(tmp_path: Path) -> None:
    write(tmp_path, "p.md", "Inline me.")
    write(tmp_path, "lead.toml", 'prompt = "${file:p.md}"\nrole = "system"\n')
    write(tmp_path, "main.toml", 'lead = "${file:lead.toml}"\n')
    root = Box()
    root.lead = Prompt()
    root.load(tmp_path / "main.toml")
    root.save(tmp_path / "out.toml")
    text = (tmp_path / "out.toml").read_text(encoding="utf-8")
    assert "${" not in text
    body = '[lead]\nprompt = """\nInline me.\n"""\n\nrole = """\nsystem\n"""\n'
    assert text == f"# promptimus checkpoint format=2\n\n{body}"


def test_reference_lookalike_in_a_text_file_stays_literal(tmp_path: Path) -> None:
    write(tmp_path, "p.md", "${file:secret.toml}\n")
    write(tmp_path, "main.toml", 'prompt = "${file:p.md}"\nrole = "system"\n')
    lead = Prompt()
    lead.load(tmp_path / "main.toml")
    assert lead.prompt.value == "${file:secret.toml}"
    lead.save(tmp_path / "out.toml")
    again = Prompt()
    again.load(tmp_path / "out.toml")
    assert again.prompt.value == "${file:secret.toml}"


def test_reference_to_a_missing_file(tmp_path: Path) -> None:
    write(tmp_path, "main.toml", 'prompt = "${file:gone.md}"\nrole = "x"\n')
    lead = Prompt()
    before = lead.state_dict()
    with pytest.raises(CheckpointReferenceError, match=r"gone\.md"):
        lead.load(tmp_path / "main.toml")
    assert lead.state_dict() == before


def test_reference_cycles_are_detected(tmp_path: Path) -> None:
    write(tmp_path, "a.toml", 'b = "${file:b.toml}"\n')
    write(tmp_path, "b.toml", 'a = "${file:a.toml}"\n')
    write(tmp_path, "self.toml", 'me = "${file:self.toml}"\n')
    with pytest.raises(CheckpointReferenceError, match="cycle"):
        Box().load(tmp_path / "a.toml")
    with pytest.raises(CheckpointReferenceError, match="cycle"):
        Box().load(tmp_path / "self.toml")
    with pytest.raises(CheckpointReferenceError, match="cycle"):
        module_dict_from_toml_str('x = "${file:a.toml}"', base_path=tmp_path)


def test_the_same_file_may_be_referenced_twice(tmp_path: Path) -> None:
    write(tmp_path, "p.toml", 'prompt = "same"\nrole = "r"\n')
    write(tmp_path, "main.toml", 'a = "${file:p.toml}"\nb = "${file:p.toml}"\n')
    root = Box()
    root.a, root.b = Prompt(), Prompt()
    root.load(tmp_path / "main.toml")
    assert root.a.prompt.value == root.b.prompt.value == "same"


def test_reference_error_inside_a_referenced_file_names_it(tmp_path: Path) -> None:
    write(tmp_path, "bad.toml", "prompt = = 1\n")
    write(tmp_path, "main.toml", 'lead = "${file:bad.toml}"\n')
    root = Box()
    root.lead = Prompt()
    with pytest.raises(CheckpointSyntaxError, match=r"bad\.toml.*line 1"):
        root.load(tmp_path / "main.toml")


@pytest.mark.parametrize("reference", ["../outside.md", "sub/../../outside.md", "OUTSIDE_ABSOLUTE"])
def test_references_cannot_escape_the_checkpoint_folder(tmp_path: Path, reference: str) -> None:
    outside = write(tmp_path, "outside.md", "secret")
    reference = reference.replace("OUTSIDE_ABSOLUTE", str(outside))
    main = write(tmp_path, "ckpt/main.toml", f'prompt = "${{file:{reference}}}"\nrole = "x"\n')
    lead = Prompt()
    before = lead.state_dict()
    with pytest.raises(UnsafeReference, match="allow_paths"):
        lead.load(main)
    assert lead.state_dict() == before
    lead.load(main, allow_paths=[tmp_path])
    assert lead.prompt.value == "secret"


def test_allow_paths_is_not_a_blanket_permission(tmp_path: Path) -> None:
    write(tmp_path, "elsewhere/secret.md", "secret")
    write(tmp_path, "allowed/ok.md", "ok")
    main = write(
        tmp_path, "ckpt/main.toml", 'prompt = "${file:../elsewhere/secret.md}"\nrole = "x"\n'
    )
    with pytest.raises(UnsafeReference):
        Prompt().load(main, allow_paths=[tmp_path / "allowed"])


def test_nested_reference_cannot_escape_either(tmp_path: Path) -> None:
    write(tmp_path, "outside.md", "secret")
    write(tmp_path, "ckpt/parts/lead.toml", 'prompt = "${file:../../outside.md}"\nrole = "x"\n')
    main = write(tmp_path, "ckpt/main.toml", 'lead = "${file:parts/lead.toml}"\n')
    root = Box()
    root.lead = Prompt()
    with pytest.raises(UnsafeReference):
        root.load(main)


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlink_escaping_the_folder_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "outside/secret.md", "secret")
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "link.md").symlink_to(tmp_path / "outside" / "secret.md")
    (folder / "linkdir").symlink_to(tmp_path / "outside", target_is_directory=True)
    for target in ("link.md", "linkdir/secret.md"):
        main = write(folder, "main.toml", f'prompt = "${{file:{target}}}"\nrole = "x"\n')
        with pytest.raises(UnsafeReference):
            Prompt().load(main)


def test_module_dict_from_toml_str_resolves_against_base_path(tmp_path: Path) -> None:
    write(tmp_path, "p.md", "hello")
    data = module_dict_from_toml_str('prompt = "${file:p.md}"', base_path=tmp_path)
    assert data["params"]["prompt"] == "hello"
    with pytest.raises(UnsafeReference):
        module_dict_from_toml_str('prompt = "${file:../p.md}"', base_path=tmp_path / "sub")


# ---------------------------------------------------------------------------------- ${pkg:}


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A real importable package shipping checkpoint files (unique name per test)."""
    name = f"pm_ckpts_{tmp_path.name.replace('-', '_')}"
    root = tmp_path / "site" / name
    write(root, "__init__.py", "")
    write(root, "agents/__init__.py", "")
    write(root, "agents/lead.toml", 'prompt = "${file:lead_prompt.md}"\nrole = "system"\n')
    write(root, "agents/lead_prompt.md", "Packaged prompt.\n")
    write(root, "agents/escape.toml", 'prompt = "${file:../../../outside.md}"\nrole = "x"\n')
    write(tmp_path, "outside.md", "secret")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return name


def test_pkg_reference_to_a_toml_submodule(package: str) -> None:
    data = module_dict_from_toml_str(f'lead = "${{pkg:{package}.agents.lead.toml}}"')
    assert data["submodules"]["lead"]["params"] == {
        "prompt": "Packaged prompt.",
        "role": "system",
    }
    root = Box()
    root.lead = Prompt()
    root.load_dict(data)
    assert root.lead.prompt.value == "Packaged prompt."


def test_pkg_reference_to_a_text_file(package: str) -> None:
    data = module_dict_from_toml_str(f'prompt = "${{pkg:{package}.agents.lead_prompt.md}}"')
    assert data["params"]["prompt"] == "Packaged prompt."


def test_pkg_reference_cannot_escape_its_package(package: str) -> None:
    with pytest.raises(UnsafeReference):
        module_dict_from_toml_str(f'x = "${{pkg:{package}.agents.escape.toml}}"')


@pytest.mark.parametrize(
    "target", ["no_such_package_xyz.file.toml", "PKG.agents.missing.toml", "lead.toml", "x"]
)
def test_bad_pkg_references(package: str, target: str) -> None:
    target = target.replace("PKG", package)
    with pytest.raises(CheckpointReferenceError):
        module_dict_from_toml_str(f'x = "${{pkg:{target}}}"')


# ------------------------------------------------------------------ the planner's structural face


class Slot:
    """A parameter as the load planner sees it, with no Parameter class behind it."""

    def __init__(self, value: Any = UNSET) -> None:
        self._value = value

    @property
    def is_set(self) -> bool:
        return self._value is not UNSET


class Node:
    """A module as the load planner sees it, with no Module class behind it."""

    def __init__(self, path: str, params: dict[str, Slot], submodules: dict[str, Node]) -> None:
        self.path = path
        self._parameters = params
        self._submodules = submodules


def test_the_load_planner_needs_only_the_module_shape_not_the_module_class() -> None:
    text, count = Slot("old"), Slot(1)
    tree = Node("root", {"text": text}, {"child": Node("root.child", {"count": count}, {})})
    data = {"params": {"text": "new"}, "submodules": {"child": {"params": {"count": 2}}}}
    plan = plan_load(tree, data)
    assert (text._value, count._value) == ("old", 1)  # nothing changes before apply()
    plan.apply()
    assert (text._value, count._value) == ("new", 2)
    with pytest.raises(CheckpointMismatch, match=r"root\.child\.count: the parameter holds a int"):
        plan_load(
            tree, {"params": {"text": "x"}, "submodules": {"child": {"params": {"count": "2"}}}}
        )
    assert (text._value, count._value) == ("new", 2)
