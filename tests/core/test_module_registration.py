"""Parameters, attribute registration, cycles, and the ModuleDict / ModuleList containers."""

from __future__ import annotations

from typing import Any

import pytest
from module_box import Box

from promptimus import Module, ModuleDict, ModuleList, Parameter, Session
from promptimus.errors import (
    InvalidParameterValue,
    ModuleError,
    ParamNotSet,
    PromptimusError,
    RecursiveModule,
)


class Leaf(Module):
    def __init__(self, prompt: str | None = "leaf prompt") -> None:
        super().__init__()
        self.prompt = Parameter(prompt)

    async def forward(self) -> str:
        return self.prompt.value


def names(module: Module) -> tuple[list[str], list[str]]:
    return list(module._parameters), [name for name, _ in module.named_children()]


def tree_snapshot(root: Module) -> list[tuple[str, int]]:
    return [(path, id(m)) for path, m in root.named_modules(remove_duplicate=False)]


# ---------------------------------------------------------------------------------- Parameter


def test_unset_parameter_names_its_path_when_read() -> None:
    root = Box()
    root.child = Box()
    root.child.prompt = Parameter()
    with pytest.raises(ParamNotSet, match=r"child\.prompt"):
        _ = root.child.prompt.value
    assert not root.child.prompt.is_set


def test_unattached_unset_parameter_says_so() -> None:
    with pytest.raises(ParamNotSet, match="unattached"):
        _ = Parameter().value


def test_parameter_path_and_name() -> None:
    root = Box()
    root.agent = Box()
    root.agent.memory = Box()
    root.agent.memory.prompt = Parameter("hi")
    param = root.agent.memory.prompt
    assert param.path == "root.agent.memory.prompt"
    assert param.name == "prompt"
    assert Parameter("free").path == "root"  # as in the original: unattached is a root


@pytest.mark.parametrize(
    "value",
    [
        "",
        "text",
        0,
        -5,
        2**63 - 1,
        -(2**63),
        0.5,
        float("inf"),
        True,
        False,
        [],
        [1, "a", [2.5, [True]]],
    ],
)
def test_parameter_accepts_checkpointable_values(value: Any) -> None:
    param = Parameter(value)
    assert param.value is value
    other = Parameter()
    other.value = value
    assert other.value is value


@pytest.mark.parametrize(
    "value",
    [(1, 2), {"a": 1}, b"bytes", {1, 2}, object(), [1, (2,)], [None], [[{"x": 1}]], "bad \ud800"],
)
def test_parameter_refuses_other_values(value: Any) -> None:
    with pytest.raises(InvalidParameterValue):
        Parameter(value)
    param = Parameter("kept")
    with pytest.raises(InvalidParameterValue):
        param.value = value
    assert param.value == "kept"


def test_invalid_value_is_a_type_error_and_a_promptimus_error() -> None:
    with pytest.raises(TypeError):
        Parameter((1,))
    with pytest.raises(PromptimusError):
        Parameter((1,))


@pytest.mark.parametrize(
    "value",
    [2**63, -(2**63) - 1, 10**30, 10**5000, [1, [2**64]]],
    ids=["2**63", "-2**63-1", "10**30", "10**5000", "nested"],
)
def test_integer_outside_64_bits_is_refused_up_front(value: Any) -> None:
    # TOML integers are 64-bit: other parsers reject a file holding more (Python's would not).
    with pytest.raises(InvalidParameterValue, match="64-bit"):
        Parameter(value)
    param = Parameter(1)
    with pytest.raises(InvalidParameterValue, match="64-bit"):
        param.value = value
    assert param.value == 1


def test_setting_none_unsets() -> None:
    param = Parameter("x")
    param.value = None  # type: ignore[assignment]
    assert not param.is_set


def test_requires_grad_mirrors_frozen() -> None:
    param = Parameter("x")
    assert param.requires_grad and not param.frozen
    param.requires_grad = False
    assert param.frozen
    frozen = Parameter("x", frozen=True)
    assert not frozen.requires_grad
    frozen.frozen = False
    assert frozen.requires_grad


def test_frozen_is_not_part_of_the_checkpoint() -> None:
    a, b = Box(), Box()
    a.prompt = Parameter("same", frozen=True)
    b.prompt = Parameter("same")
    assert a.describe() == b.describe()
    assert a.serialize() == b.serialize()
    assert a.digest() == b.digest()
    assert a.prompt.digest == b.prompt.digest


def test_requires_grad_underscore_sets_the_whole_tree() -> None:
    root = Box()
    root.a = Parameter(1)
    root.child = Leaf()
    assert root.requires_grad_(False) is root
    assert all(p.frozen for p in root.parameters())
    root.requires_grad_()
    assert not any(p.frozen for p in root.parameters())


def test_parameter_digest_tracks_value() -> None:
    param = Parameter("a")
    before = param.digest
    param.value = "b"
    assert param.digest != before
    param.value = "a"
    assert param.digest == before


# ---------------------------------------------------------------------------------- registration


def test_members_register_in_assignment_order() -> None:
    root = Box()
    root.zeta = Parameter(1)
    root.sub_b = Box()
    root.alpha = Parameter(2)
    root.sub_a = Box()
    assert names(root) == (["zeta", "alpha"], ["sub_b", "sub_a"])


def test_reassigning_same_kind_replaces_in_place() -> None:
    root = Box()
    root.first = Parameter("1")
    root.second = Parameter("2")
    old = root.first
    root.first = Parameter("new")
    assert names(root)[0] == ["first", "second"]
    assert root.first.value == "new"
    assert old.path == "root"  # the replaced parameter no longer belongs to the tree

    root.m1 = Box()
    root.m2 = Box()
    old_module = root.m1
    root.m1 = Leaf()
    assert names(root)[1] == ["m1", "m2"]
    assert old_module.path == "root"
    assert root.m1.path == "root.m1"


def test_reassigning_the_same_object_is_a_no_op() -> None:
    root = Box()
    child = Box()
    root.child = child
    root.child = child
    assert [name for _, name in child._owners] == ["child"]


def test_switching_kind_moves_the_name() -> None:
    root = Box()
    root.x = Parameter(1)
    root.x = Box()
    assert names(root) == ([], ["x"])
    assert "x" not in dict(root.named_parameters())
    root.x = Parameter(2)
    assert names(root) == (["x"], [])


def test_del_unregisters() -> None:
    root = Box()
    root.prompt = Parameter("p")
    root.child = Leaf()
    param, child = root.prompt, root.child
    del root.prompt
    del root.child
    assert names(root) == ([], [])
    assert root.serialize() == {"params": {}, "submodules": {}}
    assert param.path == "root" and child.path == "root"
    assert not hasattr(root, "prompt")
    with pytest.raises(AttributeError):
        del root.never_set


def test_private_names_never_register() -> None:
    root = Box()
    root._hidden = Parameter("secret")
    root._child = Box()
    assert names(root) == ([], [])
    assert root.serialize() == {"params": {}, "submodules": {}}
    assert root._hidden.value == "secret"


def test_plain_attributes_do_not_register() -> None:
    root = Box()
    root.count = 3
    root.label = "x"
    assert names(root) == ([], [])
    assert root.count == 3


def test_plain_value_over_a_parameter_name_is_refused_with_a_hint() -> None:
    root = Box()
    root.prompt = Parameter("p")
    with pytest.raises(ModuleError, match=r"prompt\.value"):
        root.prompt = "new text"  # type: ignore[assignment]
    assert root.prompt.value == "p"
    assert names(root)[0] == ["prompt"]


def test_plain_value_over_a_submodule_name_is_refused() -> None:
    root = Box()
    root.child = Box()
    with pytest.raises(ModuleError, match="child"):
        root.child = None
    assert isinstance(root.child, Box)


@pytest.mark.parametrize("name", ["forward", "save", "describe", "load", "named_modules"])
def test_method_names_cannot_hold_members(name: str) -> None:
    root = Box()
    with pytest.raises(ModuleError, match="method"):
        setattr(root, name, Parameter("x"))
    with pytest.raises(ModuleError, match="method"):
        setattr(root, name, Box())
    assert names(root) == ([], [])
    assert callable(getattr(root, name))


def test_forgetting_super_init_is_explained() -> None:
    class Forgetful(Module):
        def __init__(self) -> None:
            self.prompt = Parameter("x")

        async def forward(self) -> None:
            return None

    with pytest.raises(ModuleError, match=r"super\(\)\.__init__\(\)"):
        Forgetful()


def test_registering_an_uninitialised_module_is_explained() -> None:
    class Forgetful(Module):
        def __init__(self) -> None:
            self._ready = True  # private names are fine even before super().__init__()

        async def forward(self) -> None:
            return None

    root = Box()
    with pytest.raises(ModuleError, match=r"super\(\)\.__init__\(\)"):
        root.child = Forgetful()
    assert names(root) == ([], [])


def test_sync_forward_is_refused_at_class_creation() -> None:
    with pytest.raises(ModuleError, match="async def"):

        class Sync(Module):
            def forward(self) -> int:  # type: ignore[override]
                return 1


# ---------------------------------------------------------------------------------- cycles


def test_module_cannot_contain_itself() -> None:
    root = Box()
    with pytest.raises(RecursiveModule):
        root.me = root
    assert names(root) == ([], [])
    assert not hasattr(root, "me")


def test_two_module_cycle_is_refused() -> None:
    a, b = Box(), Box()
    a.b = b
    with pytest.raises(RecursiveModule):
        b.a = a
    assert names(b) == ([], [])
    assert b.path == "root.b"


def test_deep_cycle_is_refused_and_tree_unchanged() -> None:
    root = Box()
    node = root
    for i in range(6):
        setattr(node, f"level{i}", Box())
        node = getattr(node, f"level{i}")
    before = tree_snapshot(root)
    with pytest.raises(RecursiveModule):
        node.back = root
    with pytest.raises(RecursiveModule):
        node.back = root.level0.level1
    assert tree_snapshot(root) == before
    assert not hasattr(node, "back")


def test_cycle_through_a_diamond_is_refused() -> None:
    root = Box()
    root.left, root.right = Box(), Box()
    shared = Box()
    root.left.shared = shared
    root.right.shared = shared
    before = tree_snapshot(root)
    for target in (root, root.left, root.right):
        with pytest.raises(RecursiveModule):
            shared.loop = target
    # deeper: a grandchild of the shared node pointing back up through the other branch
    shared.inner = Box()
    with pytest.raises(RecursiveModule):
        shared.inner.loop = root.right
    del shared.inner
    assert tree_snapshot(root) == before


def test_replacing_with_a_cycle_keeps_the_old_member() -> None:
    root = Box()
    root.child = Box()
    old = root.child
    with pytest.raises(RecursiveModule):
        root.child.grand = root
    with pytest.raises(RecursiveModule):
        root.child = root
    assert root.child is old
    assert old.path == "root.child"


def test_diamonds_are_allowed() -> None:
    root = Box()
    shared = Leaf()
    root.a, root.b = Box(), Box()
    root.a.s = shared
    root.b.s = shared
    root.also = shared
    assert (
        shared.path == "root.also"
    )  # the parent it was registered under last (the original's rule)
    modules = [path for path, _ in root.named_modules()]
    assert modules.count("a.s") == 1 and "b.s" not in modules  # deduplicated


def test_siblings_are_not_cycles() -> None:
    root = Box()
    root.a = Box()
    root.b = Box()
    root.a.peer = root.b  # b is a's sibling, not its ancestor
    assert root.a.peer.path == "root.a.peer"  # registered last under a


# ---------------------------------------------------------------------------------- ModuleDict


def test_module_dict_is_a_mutable_mapping() -> None:
    tools = ModuleDict({"search": Leaf("s"), "calc": Leaf("c")})
    assert len(tools) == 2
    assert "search" in tools and "nope" not in tools
    assert list(tools) == ["search", "calc"]
    assert list(tools.keys()) == ["search", "calc"]
    assert [m.prompt.value for m in tools.values()] == ["s", "c"]
    assert [k for k, _ in tools.items()] == ["search", "calc"]
    tools.update({"extra": Leaf("e")})
    tools.update([("more", Leaf("m"))])
    assert list(tools) == ["search", "calc", "extra", "more"]
    popped = tools.pop("calc")
    assert popped.path == "root" and "calc" not in tools
    del tools["extra"]
    assert list(tools) == ["search", "more"]
    assert tools.get("missing") is None
    with pytest.raises(KeyError):
        _ = tools["missing"]
    with pytest.raises(KeyError):
        del tools["missing"]
    assert bool(ModuleDict())  # an empty container is still a module, never falsy


def test_module_dict_replacement_keeps_position() -> None:
    tools = ModuleDict({"a": Leaf("1"), "b": Leaf("2")})
    tools["a"] = Leaf("new")
    assert list(tools) == ["a", "b"]
    assert tools["a"].prompt.value == "new"


@pytest.mark.parametrize("key", ["keys", "forward", "path", "items", "values", "update", "llm"])
def test_module_dict_keys_may_collide_with_module_names(key: str) -> None:
    holder = Box()
    holder.tools = ModuleDict()
    holder.tools[key] = Leaf(key)
    assert key in holder.tools
    assert holder.tools[key].prompt.value == key
    assert holder.tools[key].path == f"root.tools.{key}"
    assert dict(holder.named_parameters())[f"tools.{key}.prompt"].value == key
    # the mapping API itself is unharmed
    assert list(holder.tools.keys()) == [key]
    assert holder.tools.path == "root.tools"
    restored = Box()
    restored.tools = ModuleDict({key: Leaf(None)})
    restored.load_dict(holder.serialize())
    assert restored.tools[key].prompt.value == key


@pytest.mark.parametrize("key", ["", "a.b", ".", 3, None])
def test_module_dict_refuses_bad_keys(key: Any) -> None:
    tools = ModuleDict()
    with pytest.raises(ModuleError):
        tools[key] = Leaf()
    assert len(tools) == 0


def test_module_dict_refuses_non_modules() -> None:
    tools = ModuleDict()
    with pytest.raises(ModuleError, match="must be a Module"):
        tools["x"] = Parameter("p")  # type: ignore[assignment]
    with pytest.raises(ModuleError):
        ModuleDict({"x": "text"})  # type: ignore[dict-item]


def test_module_dict_refuses_cycles() -> None:
    root = Box()
    root.tools = ModuleDict()
    with pytest.raises(RecursiveModule):
        root.tools["me"] = root
    with pytest.raises(RecursiveModule):
        root.tools["self"] = root.tools
    assert len(root.tools) == 0


def test_module_dict_has_identity_like_every_module() -> None:
    a, b = ModuleDict(), ModuleDict()
    assert a != b  # two distinct modules, even if both are empty
    assert len({a, b}) == 2
    session = Session()
    assert session.state(a, list) is session.state(a, list)
    assert session.state(a, list) is not session.state(b, list)
    assert len({ModuleList(), ModuleList()}) == 2


def test_module_dict_forward_is_refused() -> None:
    with pytest.raises(ModuleError):
        ModuleDict().run_sync()


# ---------------------------------------------------------------------------------- ModuleList


def prompts(layers: ModuleList) -> list[str]:
    return [m.prompt.value for m in layers]


def test_module_list_is_a_sequence_named_by_index() -> None:
    root = Box()
    root.layers = ModuleList([Leaf("a"), Leaf("b")])
    root.layers.append(Leaf("c"))
    assert len(root.layers) == 3
    assert prompts(root.layers) == ["a", "b", "c"]
    assert [name for name, _ in root.layers.named_children()] == ["0", "1", "2"]
    assert root.layers[-1].path == "root.layers.2"
    assert [m.prompt.value for m in root.layers[1:]] == ["b", "c"]
    assert root.layers[0] in root.layers
    assert root.layers.index(root.layers[1]) == 1


def test_module_list_insert_and_delete_reindex() -> None:
    root = Box()
    root.layers = ModuleList([Leaf("a"), Leaf("b"), Leaf("c")])
    dropped = root.layers[0]
    del root.layers[0]
    assert prompts(root.layers) == ["b", "c"]
    assert [m.path for m in root.layers] == ["root.layers.0", "root.layers.1"]
    assert dropped.path == "root"
    root.layers.insert(1, Leaf("x"))
    assert prompts(root.layers) == ["b", "x", "c"]
    assert [m.path for m in root.layers] == ["root.layers.0", "root.layers.1", "root.layers.2"]
    assert list(dict(root.named_parameters())) == [
        "layers.0.prompt",
        "layers.1.prompt",
        "layers.2.prompt",
    ]
    root.layers[0] = Leaf("y")
    assert prompts(root.layers) == ["y", "x", "c"]
    del root.layers[::2]
    assert prompts(root.layers) == ["x"]
    assert root.layers[0].path == "root.layers.0"
    popped = root.layers.pop()
    assert popped.prompt.value == "x" and len(root.layers) == 0
    root.layers.extend([Leaf("p"), Leaf("q")])
    root.layers.reverse()
    assert prompts(root.layers) == ["q", "p"]
    assert [m.path for m in root.layers] == ["root.layers.0", "root.layers.1"]


def test_module_list_refuses_cycles_without_changing() -> None:
    root = Box()
    root.layers = ModuleList([Leaf("a")])
    for attempt in (
        lambda: root.layers.append(root),
        lambda: root.layers.insert(0, root),
        lambda: root.layers.__setitem__(0, root.layers),
    ):
        with pytest.raises(RecursiveModule):
            attempt()
        assert prompts(root.layers) == ["a"]
        assert root.layers[0].path == "root.layers.0"


def test_module_list_refuses_non_modules() -> None:
    with pytest.raises(ModuleError):
        ModuleList([Leaf(), "text"])  # type: ignore[list-item]


def test_module_list_checkpoint_round_trip(tmp_path: Any) -> None:
    root = Box()
    root.layers = ModuleList([Leaf("first"), Leaf("second")])
    root.save(tmp_path / "layers.toml")
    text = (tmp_path / "layers.toml").read_text(encoding="utf-8")
    assert "[layers.0]" in text and "[layers.1]" in text
    fresh = Box()
    fresh.layers = ModuleList([Leaf(None), Leaf(None)])
    fresh.load(tmp_path / "layers.toml")
    assert prompts(fresh.layers) == ["first", "second"]
    assert fresh.digest() == root.digest()
