"""Load planning: a module dict validated against a module tree before anything changes, then
applied all at once (`LoadPlan.apply`), so a load either changes every value or none.

The planner knows no `Module` class: it reads a tree through two small structural protocols,
`ModuleLike` and `ParameterLike`, which `Module` and `Parameter` satisfy. So the core imports the
checkpoint code and never the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import CheckpointMismatch, InvalidParameterValue
from .format import module_dict_parts
from .values import check_value, copy_value, value_digest

__all__ = ["LoadPlan", "ModuleLike", "ParameterLike", "plan_load"]


class ParameterLike(Protocol):
    """A parameter as the planner sees it: whether it holds a value, and the raw value (`UNSET`
    when it has none), which `LoadPlan.apply` assigns as the plan checked it."""

    _value: Any

    @property
    def is_set(self) -> bool: ...


class ModuleLike(Protocol):
    """A module as the planner sees it: its absolute path, and the parameters and submodules
    registered on it, by name (a member shared under two names appears under both)."""

    @property
    def path(self) -> str: ...

    @property
    def _parameters(self) -> Mapping[str, ParameterLike]: ...

    @property
    def _submodules(self) -> Mapping[str, ModuleLike]: ...


@dataclass
class LoadPlan:
    """Everything a load would change, computed before anything is changed."""

    assignments: dict[int, tuple[ParameterLike, Any, str]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def apply(self) -> None:
        for param, value, _ in self.assignments.values():
            param._value = value


def _kind(value: Any) -> str:
    for kind in (bool, int, float, str, list):
        if isinstance(value, kind):
            return kind.__name__
    return type(value).__name__


def _fit(param: ParameterLike, value: Any, key: str) -> Any:
    # copied: the loaded module must not share a list with the caller's dict (or another module)
    value = copy_value(check_value(value, f"Checkpoint key {key!r}"))
    if not param.is_set:
        return value
    want, got = _kind(param._value), _kind(value)
    if want == got:
        return value
    if want == "float" and got == "int":
        return float(value)
    raise InvalidParameterValue(
        f"{key}: the parameter holds a {want} but the checkpoint has a {got} ({value!r:.60}); "
        "fix the value in the checkpoint or change the parameter's default."
    )


class _Planner:
    """One walk over a module tree beside a module dict, filling a `LoadPlan`. Errors name
    absolute paths (under `base`, the root's path); missing/unexpected keep relative keys."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.plan = LoadPlan()

    def relative(self, key: str) -> str:
        return key[len(self.base) + 1 :]

    def walk(self, node: ModuleLike, module_dict: Mapping[str, Any], prefix: str) -> None:
        if not isinstance(module_dict, Mapping):
            self.plan.errors.append(f"{prefix}: is a submodule, but the checkpoint has a value")
            return
        try:
            params, submodules = module_dict_parts(module_dict, prefix)
        except CheckpointMismatch as exc:
            self.plan.errors.append(str(exc))
            return
        self.parameters(node, params, prefix)
        self.submodules(node, submodules, prefix)

    def parameters(self, node: ModuleLike, params: Mapping[str, Any], prefix: str) -> None:
        plan = self.plan
        for name, value in params.items():
            key = f"{prefix}.{name}"
            param = node._parameters.get(name)
            if param is None:
                if name in node._submodules:
                    plan.errors.append(f"{key}: is a submodule, but the checkpoint has a value")
                else:
                    plan.unexpected.append(self.relative(key))
                continue
            try:
                fitted = _fit(param, value, key)
            except InvalidParameterValue as exc:
                plan.errors.append(str(exc))
                continue
            earlier = plan.assignments.get(id(param))
            if earlier is not None and value_digest(earlier[1]) != value_digest(fitted):
                plan.errors.append(
                    f"{key}: the same parameter is shared with {earlier[2]}, but the checkpoint "
                    "gives the two paths different values"
                )
                continue
            plan.assignments[id(param)] = (param, fitted, key)
        for name, param in node._parameters.items():
            if name not in params and param.is_set:
                plan.missing.append(self.relative(f"{prefix}.{name}"))

    def submodules(self, node: ModuleLike, submodules: Mapping[str, Any], prefix: str) -> None:
        for name, value in submodules.items():
            key = f"{prefix}.{name}"
            child = node._submodules.get(name)
            if child is None:
                if name in node._parameters:
                    self.plan.errors.append(
                        f"{key}: is a parameter, but the checkpoint has a table"
                    )
                else:
                    self.plan.unexpected.append(self.relative(key))
                continue
            self.walk(child, value, key)
        for name, child in node._submodules.items():
            if name not in submodules:
                self.walk(child, {}, f"{prefix}.{name}")


def _problems(plan: LoadPlan, base: str, strict: bool) -> str | None:
    """The `CheckpointMismatch` message for what `plan` found, or None if it may be applied."""
    problems = list(plan.errors)
    if strict and plan.unexpected:
        problems.append(
            "unknown keys (the module has no such parameter or submodule): "
            + ", ".join(f"{base}.{key}" for key in plan.unexpected)
        )
    if strict and plan.missing:
        problems.append(
            "missing keys (the module has them, the checkpoint does not): "
            + ", ".join(f"{base}.{key}" for key in plan.missing)
        )
    if not problems:
        return None
    hint = (
        "\nPass strict=False to load the matching keys and skip unknown/missing ones."
        if strict and (plan.unexpected or plan.missing) and not plan.errors
        else ""
    )
    return (
        "Checkpoint does not fit the module; nothing was loaded:\n- " + "\n- ".join(problems) + hint
    )


def plan_load(module: ModuleLike, data: Mapping[str, Any], strict: bool = True) -> LoadPlan:
    """Validate a module dict against `module`'s tree; raise `CheckpointMismatch` listing every
    problem, or return the plan whose `apply()` changes everything at once."""
    if not isinstance(data, Mapping):
        raise CheckpointMismatch(f"A checkpoint must be a module dict, got {type(data).__name__}.")
    planner = _Planner(module.path)
    planner.walk(module, data, planner.base)
    message = _problems(planner.plan, planner.base, strict)
    if message is not None:
        raise CheckpointMismatch(message)
    return planner.plan
