"""Property tests: save -> load is the identity for every value a Parameter may hold, and the
digest is a pure function of the values."""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from exact_values import same
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from module_box import Box

from promptimus import ModuleDict, Parameter, module_dict_from_toml_str
from promptimus.core import module_dict_to_toml_str

# No time limits: a loaded machine must not turn a slow example into a failure.
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TREE_SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


reference_like = st.builds(
    lambda dollars, kind, target: "$" * dollars + "{" + kind + ":" + target + "}",
    st.integers(1, 3),
    st.sampled_from(["file", "pkg"]),
    st.text(max_size=12),
)
tricky_text = st.sampled_from(
    [
        "",
        "\n",
        "\n\n\n",
        "\nlead",
        "trail\n",
        '"""',
        'ends with a quote"',
        'ends with two""',
        '""""""',
        "\\",
        "trailing backslash\\",
        "\\n literal",
        "\t\r\n\r",
        "\r\n",
        "\x00\x01\x1f\x7f",
        "\u2028\u0085\ufeff",
        "😀 non-BMP 𝄞",
        "'''",
        "${file:x.toml}",
        "${pkg:a.b.c.toml}",
        "$${file:x.toml}",
    ]
)
texts = st.one_of(st.text(), tricky_text, reference_like)
scalars = st.one_of(
    texts,
    # TOML integers are 64-bit; larger ones are refused at assignment
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([2**63 - 1, -(2**63), 2**53 + 1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-0.0, 0.0, 1e300, -1e-300, 5e-324, float("inf"), float("-inf")]),
    st.booleans(),
)
values = st.recursive(scalars, lambda children: st.lists(children, max_size=4), max_leaves=12)
# not a name the Module class already uses (llm, path, forward, ...): those cannot be parameters
names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda name: not hasattr(Box, name)
)
module_keys = st.text(min_size=1, max_size=8).filter(lambda k: "." not in k)
param_sets = st.dictionaries(names, values, max_size=5)


def build(params: dict[str, Any], sub_params: dict[str, Any], key: str) -> Box:
    root = Box()
    for name, value in params.items():
        setattr(root, name, Parameter(value))
    root.child = Box()
    for name, value in sub_params.items():
        setattr(root.child, name, Parameter(value))
    root.group = ModuleDict({key: Box()})
    for name, value in sub_params.items():
        setattr(root.group[key], name, Parameter(value))
    return root


def blank_like(tree: Box) -> Box:
    """The same structure with every parameter unset, so a load has to supply every value."""
    fresh = Box()
    for name in tree._parameters:
        setattr(fresh, name, Parameter())
    fresh.child = Box()
    for name in tree.child._parameters:
        setattr(fresh.child, name, Parameter())
    fresh.group = ModuleDict({key: Box() for key in tree.group})
    for key, module in tree.group.items():
        for name in module._parameters:
            setattr(fresh.group[key], name, Parameter())
    return fresh


def assert_same_tree(loaded: Box, original: Box) -> None:
    left, right = loaded.state_dict(), original.state_dict()
    assert list(left) == list(right)
    for key in right:
        assert same(left[key], right[key]), key
    assert loaded.digest() == original.digest()


trees = st.builds(build, param_sets, param_sets, module_keys)


@pytest.fixture(scope="module")
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as name:
        yield Path(name)


# ---------------------------------------------------------------------------------- round trips


@SETTINGS
@given(value=values)
@example(value="")
@example(value="\n")
@example(value='say """hi"""')
@example(value="C:\\path\\")
@example(value="${file:x.toml}")
@example(value=-0.0)
@example(value=float("nan"))
@example(value=2**63 - 1)
@example(value=-(2**63))
@example(value=[[], [[""]], [True, 0, 0.0]])
def test_single_value_round_trips_through_text(value: Any) -> None:
    root = Box()
    root.value = Parameter(value)
    text = root.describe()
    data = module_dict_from_toml_str(text)
    assert same(data["params"]["value"], value)
    loaded = Box()
    loaded.value = Parameter()
    loaded.load_dict(data)
    assert same(loaded.value.value, value)
    assert loaded.value.digest == root.value.digest


@TREE_SETTINGS
@given(tree=trees)
def test_serialize_load_dict_is_identity(tree: Box) -> None:
    fresh = blank_like(tree)
    fresh.load_dict(tree.serialize())
    assert_same_tree(fresh, tree)


@TREE_SETTINGS
@given(tree=trees)
def test_state_dict_load_state_dict_is_identity(tree: Box) -> None:
    fresh = blank_like(tree)
    assert fresh.load_state_dict(tree.state_dict()) == ([], [])
    assert_same_tree(fresh, tree)


@TREE_SETTINGS
@given(tree=trees)
def test_text_round_trip_is_identity(tree: Box) -> None:
    data = module_dict_from_toml_str(module_dict_to_toml_str(tree.serialize()))
    fresh = blank_like(tree)
    fresh.load_dict(data)
    assert_same_tree(fresh, tree)


@TREE_SETTINGS
@given(tree=trees)
def test_save_load_file_is_identity(tree: Box, folder: Path) -> None:
    path = folder / "tree.toml"
    tree.save(path)
    fresh = blank_like(tree)
    fresh.load(path)
    assert_same_tree(fresh, tree)
    # and saving the loaded tree writes the very same bytes
    first = path.read_bytes()
    fresh.save(path)
    assert path.read_bytes() == first


@TREE_SETTINGS
@given(tree=trees)
def test_loading_over_set_values_is_identity(tree: Box) -> None:
    # a module holding other values of the same kinds takes the checkpoint's values exactly
    other = build(
        {name: _same_kind(value) for name, value in tree.state_dict().items() if "." not in name},
        {n: _same_kind(p.value) for n, p in tree.child._parameters.items()},
        next(iter(tree.group)),
    )
    other.load_dict(tree.serialize())
    assert_same_tree(other, tree)


def _same_kind(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value - 1 if value > 0 else value + 1  # stays within 64 bits
    if isinstance(value, float):
        return 12.5
    if isinstance(value, str):
        return value + "x"
    return [*value, 0]


# ---------------------------------------------------------------------------------- digests


@SETTINGS
@given(a=values, b=values)
def test_digest_equal_iff_values_equal(a: Any, b: Any) -> None:
    assert (Parameter(a).digest == Parameter(b).digest) == same(a, b)
    assert Parameter(a).digest == Parameter(copy.deepcopy(a)).digest


@SETTINGS
@given(value=values)
def test_digest_ignores_how_the_value_was_set(value: Any) -> None:
    constructed = Box()
    constructed.p = Parameter(value)
    assigned = Box()
    assigned.p = Parameter()
    assigned.p.value = value
    loaded = Box()
    loaded.p = Parameter()
    loaded.load_dict(module_dict_from_toml_str(constructed.describe()))
    assert constructed.digest() == assigned.digest() == loaded.digest()


@TREE_SETTINGS
@given(tree=trees)
def test_equal_trees_have_equal_digests(tree: Box) -> None:
    twin = blank_like(tree)
    twin.load_state_dict(tree.state_dict())
    assert twin.digest() == tree.digest()
    if tree.state_dict():
        name, param = next(iter(tree.named_parameters()))
        param.value = _same_kind(param.value)
        assert twin.digest() != tree.digest(), name


def test_empty_and_unset_values_have_distinct_digests() -> None:
    digests = [Parameter(v).digest for v in ("", 0, 0.0, -0.0, False, [], [[]], "0", 1, True)]
    digests.append(Parameter().digest)
    assert len(set(digests)) == len(digests)
    unset_tree, empty_tree, no_param = Box(), Box(), Box()
    unset_tree.p = Parameter()
    empty_tree.p = Parameter("")
    assert len({unset_tree.digest(), empty_tree.digest(), no_param.digest()}) == 3


def test_digest_tells_parameters_from_submodules_and_names() -> None:
    a, b, c = Box(), Box(), Box()
    a.x = Parameter(1)
    b.y = Parameter(1)
    c.x = Box()
    assert len({a.digest(), b.digest(), c.digest()}) == 3
