"""`ModuleDict` and `ModuleList`: modules held by key or by index, registered like attributes."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, MutableMapping, MutableSequence
from typing import Any, overload

from .._compat_seam import CompatProperty
from ..errors import ModuleError
from .module import Module


def _check_module(container: Module, key: str, value: Any) -> Module:
    if not isinstance(value, Module):
        raise ModuleError(
            f"{container._where()}[{key!r}] must be a Module, got {type(value).__name__}."
        )
    return value


class ModuleDict(Module, MutableMapping[str, Module]):
    """A mutable mapping of name → module. Keys are any non-empty strings without dots (dots
    separate path parts in checkpoints); keys may equal method names (`"keys"`, `"forward"`)."""

    def __init__(
        self,
        modules: Mapping[str, Module] | Iterable[tuple[str, Module]] = (),
        /,
        **named: Module,
    ) -> None:
        super().__init__()
        self.update(modules, **named)  # `ModuleDict(search=tool)`, as in the original promptimus

    @staticmethod
    def _check_key(key: Any) -> str:
        if not isinstance(key, str) or not key or "." in key:
            raise ModuleError(
                f"ModuleDict keys must be non-empty strings without '.', got {key!r}; dots "
                "separate the parts of a checkpoint path."
            )
        return key

    def __getitem__(self, key: str) -> Module:
        try:
            return self._submodules[key]
        except KeyError:
            raise KeyError(key) from None

    def __setitem__(self, key: str, module: Module) -> None:
        old = self._member(self._check_key(key))
        self._register(key, _check_module(self, key, module))
        if old is not None and self.__dict__.get(key) is old:  # registered as `md.key = ...`
            object.__setattr__(self, key, module)

    def __delitem__(self, key: str) -> None:
        if key not in self._submodules:
            raise KeyError(key)
        old = self._submodules[key]
        self._unregister(key)
        if self.__dict__.get(key) is old:  # registered as `md.key = ...`
            object.__delattr__(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._submodules))

    def __len__(self) -> int:
        return len(self._submodules)

    def __contains__(self, key: object) -> bool:
        return key in self._submodules

    def __bool__(self) -> bool:
        return True  # a module is never "falsy", even when empty

    objects_map = CompatProperty("core:objects_map")

    # A module is an object with an identity, not a value: `Mapping` would make two ModuleDicts
    # with the same entries equal and leave them unhashable (no sets, no Session state, no weakref
    # keys), unlike every other module.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise ModuleError(f"{self._where()} has no forward of its own; call the modules it holds.")


class ModuleList(Module, MutableSequence[Module]):
    """A list of modules, registered under their indices ("0", "1", ...)."""

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        for module in modules:
            self.append(module)

    def _items(self) -> list[Module]:
        return list(self._submodules.values())

    def _rebuild(self, items: list[Module]) -> None:
        for index, module in enumerate(items):  # refuse cycles and depth before any change
            self._check_no_cycle(str(index), module)
            self._check_depth(str(index), module)
        for name in list(self._submodules):
            self._unregister(name)
        for index, module in enumerate(items):
            self._register(str(index), module)

    @overload
    def __getitem__(self, index: int) -> Module: ...
    @overload
    def __getitem__(self, index: slice) -> list[Module]: ...
    def __getitem__(self, index: int | slice) -> Module | list[Module]:
        return self._items()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        items = self._items()
        if isinstance(index, slice):
            items[index] = [_check_module(self, "slice", m) for m in value]
        else:
            items[index] = _check_module(self, str(index), value)
        self._rebuild(items)

    def __delitem__(self, index: int | slice) -> None:
        items = self._items()
        del items[index]
        self._rebuild(items)

    def __len__(self) -> int:
        return len(self._submodules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._items())

    def __bool__(self) -> bool:
        return True

    def insert(self, index: int, value: Module) -> None:
        items = self._items()
        items.insert(index, _check_module(self, str(index), value))
        self._rebuild(items)

    def append(self, value: Module) -> None:
        self._register(str(len(self._submodules)), _check_module(self, "append", value))

    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise ModuleError(f"{self._where()} has no forward of its own; call the modules it holds.")
