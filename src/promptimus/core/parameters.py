"""`Parameter`: a named, checkpointed value owned by a `Module` (a prompt, a number, a list)."""

from __future__ import annotations

import copy
import weakref
from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeAlias, TypeVar

from ..checkpoint.values import UNSET, check_value, copy_value, value_digest
from ..errors import ParamNotSet

ParamValue: TypeAlias = "str | int | float | bool | list[ParamValue]"
T = TypeVar("T")

__all__ = [
    "UNSET",
    "Owner",
    "ParamValue",
    "Parameter",
    "check_value",
    "copy_value",
    "owner_path",
    "value_digest",
]


class Owner(Protocol):
    """What a parameter (or a submodule) knows of the module it is registered on: its path.
    `Module` is one; naming the protocol instead keeps this file free of the module's."""

    @property
    def path(self) -> str: ...


OwnerT = TypeVar("OwnerT", bound=Owner)


def owner_path(owners: Sequence[tuple[weakref.ref[OwnerT], str]]) -> str:
    """The path of a member registered under `owners`: the last live owner's path + its name."""
    for owner_ref, name in reversed(owners):
        owner = owner_ref()
        if owner is not None:
            return f"{owner.path}.{name}"
    return "root"


class Parameter(Generic[T]):
    """A value a module exposes for checkpoints and optimizers.

    `Parameter()` starts unset: reading `.value` raises `ParamNotSet` naming the parameter's path.
    `frozen=True` marks it as not trainable (optimizers leave it alone); frozen-ness belongs to
    the program, not of the checkpoint, so it is never saved.
    """

    __slots__ = ("__weakref__", "_owners", "_value", "frozen")

    def __init__(self, value: T | None = None, *, frozen: bool = False) -> None:
        self._value: Any = UNSET if value is None else check_value(value)
        self._owners: list[tuple[weakref.ref[Owner], str]] = []
        self.frozen = frozen

    @property
    def value(self) -> T:
        if self._value is UNSET:
            unattached = "" if self.name else " (unattached)"
            raise ParamNotSet(
                f"Parameter {self.path!r}{unattached} has no value yet; set `.value`, pass a "
                "value when constructing it, or load a checkpoint that contains it."
            )
        return self._value  # type: ignore[no-any-return]

    @value.setter
    def value(self, value: T) -> None:
        self._value = UNSET if value is None else check_value(value, f"Parameter {self.path!r}")

    @property
    def is_set(self) -> bool:
        return self._value is not UNSET

    @property
    def requires_grad(self) -> bool:
        return not self.frozen

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.frozen = not flag

    @property
    def name(self) -> str:
        for owner_ref, name in reversed(self._owners):
            if owner_ref() is not None:
                return name
        return ""

    @property
    def path(self) -> str:
        """Absolute dotted path, e.g. `root.agent.memory.prompt` (see `Module.path`); an
        unattached parameter's path is `"root"`, as in the original promptimus."""
        return owner_path(self._owners)

    @property
    def digest(self) -> str:
        return value_digest(self._value)

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter[T]:
        # the owners are re-attached by the module being copied (see `Module.__deepcopy__`)
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        clone._value = copy.deepcopy(self._value, memo)
        clone._owners = []
        clone.frozen = self.frozen
        return clone

    def __getstate__(self) -> dict[str, Any]:
        # owners are weak references (not picklable); the unpickled module re-attaches its own
        return {"value": self._value, "frozen": self.frozen}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._value = state["value"]
        self._owners = []
        self.frozen = state["frozen"]

    def _attach(self, owner: Owner, name: str) -> None:
        self._owners.append((weakref.ref(owner), name))

    def _detach(self, owner: Owner, name: str) -> None:
        self._owners = [(ref, n) for ref, n in self._owners if not (ref() is owner and n == name)]

    def __repr__(self) -> str:
        if self._value is UNSET:
            shown = "<unset>"
        else:
            shown = repr(self._value)
            if len(shown) > 60:
                shown = shown[:57] + "..."
        frozen = ", frozen=True" if self.frozen else ""
        return f"Parameter({shown}{frozen})"
