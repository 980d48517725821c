"""`Parameter`: a named, checkpointed value owned by a `Module` (a prompt, a number, a list)."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import weakref
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar

from ..checkpoint.limits import MAX_VALUE_DEPTH
from ..errors import InvalidParameterValue, ParamNotSet

if TYPE_CHECKING:
    from .module import Module

ParamValue: TypeAlias = "str | int | float | bool | list[ParamValue]"
T = TypeVar("T")


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"

    def __reduce__(self) -> str:
        return "UNSET"  # unpickles as the module's singleton, so `is UNSET` keeps working


UNSET: Any = _Unset()

# TOML integers are 64-bit: other parsers (and TOML-based tools) reject a file holding more.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def copy_value(value: Any) -> Any:
    """A copy of a parameter value that shares no list with it (scalars are immutable)."""
    if isinstance(value, list):
        return [copy_value(item) for item in value]
    return value


def check_value(value: Any, where: str = "a Parameter") -> Any:
    """Return `value` if a checkpoint can hold it exactly, else raise `InvalidParameterValue`.

    Checkpoints hold str, 64-bit int, float, bool and lists of these nested at most
    `MAX_VALUE_DEPTH` deep. Strings must be encodable as UTF-8 (no lone surrogates), so a value
    that is accepted here always saves, and every TOML parser reads it back.
    """
    if type(value) is str and value.isascii():  # the common case, checked at once
        return value
    todo: list[tuple[Any, int]] = [(value, 0)]  # (item, lists around it); no recursion
    while todo:
        item, depth = todo.pop()
        if isinstance(item, bool | float):
            continue
        if isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                raise InvalidParameterValue(
                    f"{where} got an integer outside the 64-bit range TOML allows "
                    f"({item.bit_length()} bits); other TOML readers would reject the file. "
                    "Store it as a string (or as a float, if an approximation will do)."
                )
            continue
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidParameterValue(
                    f"{where} got a string with an unpaired surrogate at index {exc.start}; "
                    "checkpoints are UTF-8, so remove or replace that character."
                ) from None
            continue
        if isinstance(item, list):
            if depth + 1 > MAX_VALUE_DEPTH:
                raise InvalidParameterValue(
                    f"{where} got lists nested more than {MAX_VALUE_DEPTH} deep "
                    "(promptimus.core.MAX_VALUE_DEPTH); flatten the value or store it as text."
                )
            todo.extend((child, depth + 1) for child in item)
            continue
        raise InvalidParameterValue(
            f"{where} cannot hold a value of type {type(item).__name__}; use str, int, float, "
            "bool or a list of these (convert tuples to lists, serialise objects to text "
            "yourself)."
        )
    return value


def _canonical(value: Any) -> Any:
    # Tagged so that 1, 1.0, True and "1" never share a digest.
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, int):
        return ["i", str(int(value))]  # int(): a subclass may define its own __str__
    if isinstance(value, float):
        return ["f", value.hex() if math.isfinite(value) else repr(float(value))]
    if isinstance(value, str):
        return ["s", value]
    return ["l", [_canonical(v) for v in value]]


def value_digest(value: Any) -> str:
    """A stable content hash of a parameter value (or of `UNSET`)."""
    payload = ["unset"] if value is UNSET else _canonical(value)
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def owner_path(owners: list[tuple[weakref.ref[Module], str]]) -> str:
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
        self._owners: list[tuple[weakref.ref[Module], str]] = []
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

    def _attach(self, owner: Module, name: str) -> None:
        self._owners.append((weakref.ref(owner), name))

    def _detach(self, owner: Module, name: str) -> None:
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
