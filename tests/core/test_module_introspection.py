"""Paths, providers and the PyTorch-style views of a module tree."""

from __future__ import annotations

import copy
import gc
from typing import Any

import pytest
from module_box import Box

from promptimus import Module, ModuleDict, Parameter
from promptimus.core import IncompatibleKeys
from promptimus.errors import (
    CheckpointMismatch,
    EmbedderNotSet,
    LLMNotSet,
    ProviderNotSet,
    RecursiveModule,
    RerankerNotSet,
    VectorStoreNotSet,
)


class Prompt(Module):
    def __init__(self, text: str | None = "You are helpful.", role: str = "system") -> None:
        super().__init__()
        self.prompt = Parameter(text)
        self.role = Parameter(role)

    async def forward(self) -> Any:
        return self.llm


class Agent(Module):
    def __init__(self) -> None:
        super().__init__()
        self.name_ = Parameter("agent")
        self.memory = Box()
        self.memory.size = Parameter(5)
        self.memory.prompt = Prompt()
        self.tools = ModuleDict({"search": Prompt("search it", "tool")})

    async def forward(self) -> Any:
        return None


def fake(label: str) -> Any:
    """Providers are duck-typed: any object will do for resolution tests."""
    return type(label, (), {"__repr__": lambda self: label, "achat": lambda self, history: None})()


# ---------------------------------------------------------------------------------- paths


def test_paths_of_nested_modules_and_parameters() -> None:
    agent = Agent()
    assert agent.path == "root"
    assert agent.memory.path == "root.memory"
    assert agent.memory.prompt.path == "root.memory.prompt"
    assert agent.memory.prompt.prompt.path == "root.memory.prompt.prompt"
    assert agent.tools["search"].role.path == "root.tools.search.role"
    holder = Box()
    holder.agent = agent
    assert agent.memory.prompt.prompt.path == "root.agent.memory.prompt.prompt"


# ---------------------------------------------------------------------------------- providers

PROVIDERS = [
    ("llm", "with_llm", LLMNotSet),
    ("embedder", "with_embedder", EmbedderNotSet),
    ("vector_store", "with_vector_store", VectorStoreNotSet),
    ("reranker", "with_reranker", RerankerNotSet),
]


@pytest.mark.parametrize(("attr", "setter", "error"), PROVIDERS)
def test_missing_provider_names_the_module(attr: str, setter: str, error: type) -> None:
    agent = Agent()
    with pytest.raises(error, match=r"memory\.prompt") as info:
        getattr(agent.memory.prompt, attr)
    assert isinstance(info.value, ProviderNotSet)
    assert f"with_{attr}" in str(info.value)
    assert not agent.memory.prompt.has_provider(attr)


@pytest.mark.parametrize(("attr", "setter", "error"), PROVIDERS)
def test_provider_resolves_through_ancestors_at_use_time(
    attr: str, setter: str, error: type
) -> None:
    provider = fake("p")
    root = Box()
    assert getattr(root, setter)(provider) is root  # fluent
    root.late = Box()  # added after the provider was set
    root.late.deeper = Prompt()
    assert getattr(root.late.deeper, attr) is provider
    assert root.late.deeper.has_provider(attr)
    # moving a module elsewhere changes what it resolves to
    orphan = root.late
    del root.late
    with pytest.raises(error):
        getattr(orphan.deeper, attr)


def test_nearest_provider_wins() -> None:
    outer, inner = fake("outer"), fake("inner")
    agent = Agent().with_llm(outer)
    assert agent.memory.prompt.llm is outer
    agent.memory.with_llm(inner)
    assert agent.memory.prompt.llm is inner
    assert agent.tools["search"].llm is outer
    assert agent.llm is outer


def test_provider_through_a_diamond() -> None:
    root = Box()
    root.left, root.right = Box(), Box()
    shared = Prompt()
    root.left.shared = shared
    root.right.shared = shared
    right_llm, root_llm = fake("right"), fake("root")
    root.with_llm(root_llm)
    assert shared.llm is root_llm
    root.right.with_llm(right_llm)
    assert shared.llm is right_llm  # a parent is nearer than the grandparent


async def test_forward_sees_provider_set_later() -> None:
    agent = Agent()
    with pytest.raises(LLMNotSet):
        await agent.memory.prompt()
    llm = fake("llm")
    agent.with_llm(llm)
    assert await agent.memory.prompt() is llm


# ---------------------------------------------------------------------------------- traversal


def test_named_parameters_and_parameters() -> None:
    agent = Agent()
    named = list(agent.named_parameters())
    assert [name for name, _ in named] == [
        "name_",
        "memory.size",
        "memory.prompt.prompt",
        "memory.prompt.role",
        "tools.search.prompt",
        "tools.search.role",
    ]
    assert [p for _, p in named] == list(agent.parameters())
    assert [n for n, _ in agent.named_parameters(recurse=False)] == ["name_"]
    assert [n for n, _ in agent.memory.named_parameters(prefix="m")] == [
        "m.size",
        "m.prompt.prompt",
        "m.prompt.role",
    ]
    assert len(list(agent.parameters(recurse=False))) == 1


def test_named_modules_dedupes_a_diamond_by_default() -> None:
    root = Box()
    root.a, root.b = Box(), Box()
    shared = Prompt()
    root.a.s = shared
    root.b.s = shared
    assert [n for n, _ in root.named_modules()] == ["", "a", "a.s", "b"]
    assert [n for n, _ in root.named_modules(remove_duplicate=False)] == [
        "",
        "a",
        "a.s",
        "b",
        "b.s",
    ]
    assert [n for n, _ in root.named_modules(prefix="root")][:2] == ["root", "root.a"]
    assert list(root.modules()) == [m for _, m in root.named_modules()]
    assert [n for n, _ in root.named_parameters()] == ["a.s.prompt", "a.s.role"]
    assert [n for n, _ in root.named_parameters(remove_duplicate=False)] == [
        "a.s.prompt",
        "a.s.role",
        "b.s.prompt",
        "b.s.role",
    ]


def test_named_children_and_children() -> None:
    agent = Agent()
    assert [n for n, _ in agent.named_children()] == ["memory", "tools"]
    assert list(agent.children()) == [agent.memory, agent.tools]
    leaf = Box()
    twice = Box()
    twice.first = leaf
    twice.second = leaf
    assert list(twice.children()) == [leaf]  # one child, even under two names (as PyTorch)
    assert [n for n, _ in twice.named_children()] == ["first"]


def test_shared_parameter_listed_once() -> None:
    root = Box()
    param = Parameter("shared")
    root.a = Box()
    root.b = Box()
    root.a.p = param
    root.b.p = param
    assert list(root.parameters()) == [param]
    assert list(root.state_dict()) == ["a.p", "b.p"]


# ---------------------------------------------------------------------------------- state dicts


def test_state_dict_is_flat_and_skips_unset() -> None:
    agent = Agent()
    agent.memory.prompt.prompt.value = None  # type: ignore[assignment]
    assert agent.state_dict() == {
        "name_": "agent",
        "memory.size": 5,
        "memory.prompt.role": "system",
        "tools.search.prompt": "search it",
        "tools.search.role": "tool",
    }


def test_load_state_dict_round_trip() -> None:
    source = Agent()
    source.memory.size.value = 9
    source.tools["search"].prompt.value = "look harder"
    target = Agent()
    result = target.load_state_dict(source.state_dict())
    assert result == IncompatibleKeys([], [])
    assert target.state_dict() == source.state_dict()
    assert target.digest() == source.digest()


def test_load_state_dict_strict_names_unknown_and_missing() -> None:
    target = Agent()
    before = target.state_dict()
    state = dict(Agent().state_dict())
    del state["memory.size"]
    state["memory.bogus"] = "x"
    state["memory.prompt.prompt"] = "changed"
    with pytest.raises(CheckpointMismatch) as info:
        target.load_state_dict(state)
    message = str(info.value)
    assert "memory.size" in message and "memory.bogus" in message
    assert "strict=False" in message
    assert target.state_dict() == before  # nothing applied


def test_load_state_dict_non_strict_returns_incompatible_keys() -> None:
    target = Agent()
    state = dict(Agent().state_dict())
    del state["memory.size"]
    state["memory.bogus"] = "x"
    state["nowhere.deep.key"] = 1
    state["memory.prompt.prompt"] = "changed"
    result = target.load_state_dict(state, strict=False)
    assert isinstance(result, IncompatibleKeys)
    assert result.missing_keys == ["memory.size"]
    assert sorted(result.unexpected_keys) == ["memory.bogus", "nowhere"]
    assert target.memory.prompt.prompt.value == "changed"
    assert target.memory.size.value == 5


def test_load_state_dict_type_mismatch_refused() -> None:
    target = Agent()
    before = target.digest()
    state = target.state_dict()
    state["memory.size"] = "five"
    with pytest.raises(CheckpointMismatch, match=r"memory\.size"):
        target.load_state_dict(state)
    state = target.state_dict()
    state["memory"] = 1  # a value where a submodule is
    with pytest.raises(CheckpointMismatch, match="submodule"):
        target.load_state_dict(state, strict=False)
    assert target.digest() == before


# ---------------------------------------------------------------------------------- repr


def test_repr_shows_the_tree() -> None:
    root = Box()
    root.prompt = Parameter("You are a helpful assistant that answers every question briefly.")
    root.unset = Parameter()
    root.memory = Box()
    root.memory.size = Parameter(5, frozen=True)
    root.memory.inner = Prompt("hi", "user")
    root.empty = Box()
    assert repr(root) == (
        "Box(\n"
        "  (prompt): Parameter('You are a helpful assistant that answers every question ...)\n"
        "  (unset): Parameter(<unset>)\n"
        "  (memory): Box(\n"
        "    (size): Parameter(5, frozen=True)\n"
        "    (inner): Prompt(\n"
        "      (prompt): Parameter('hi')\n"
        "      (role): Parameter('user')\n"
        "    )\n"
        "  )\n"
        "  (empty): Box()\n"
        ")"
    )


def test_repr_includes_extra_repr() -> None:
    class Sized(Box):
        def extra_repr(self) -> str:
            return "size=3"

    assert repr(Sized()) == "Sized(size=3)"
    holder = Sized()
    holder.p = Parameter(1)
    assert repr(holder) == "Sized(size=3\n  (p): Parameter(1)\n)"


# ---------------------------------------------------------------------------------- copies


def test_deepcopy_makes_an_independent_tree() -> None:
    original = Agent().with_llm(fake("original llm"))
    shared = Prompt("shared")
    original.a, original.b = Box(), Box()
    original.a.s = shared
    original.b.s = shared
    clone = copy.deepcopy(original)
    assert clone.memory.prompt.llm is original.llm  # providers are shared, not copied
    clone_llm = fake("clone llm")
    clone.with_llm(clone_llm)
    assert clone.memory.prompt.llm is clone_llm  # resolves through the clone's own parents
    assert original.memory.prompt.llm is not clone_llm
    assert clone.a.s is clone.b.s and clone.a.s is not shared  # the diamond stays a diamond
    clone.b.with_llm(fake("b"))
    assert clone.a.s.llm is clone.b.llm  # through the clone's b, not the original's
    with pytest.raises(RecursiveModule):
        clone.a.s.back = clone
    clone.memory.size.value = 99
    assert original.memory.size.value == 5
    assert clone.state_dict().keys() == original.state_dict().keys()
    del original, shared
    gc.collect()
    assert clone.memory.prompt.prompt.path == "root.memory.prompt.prompt"
    part = copy.deepcopy(clone.memory)
    assert part.path == "root" and part.prompt.path == "root.prompt"  # a copied subtree is a root
