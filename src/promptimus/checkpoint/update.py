"""Updating a checkpoint in place: over an existing file, `save()` changes the values only, so
the comments, blank lines, key order and formatting a user gave the file survive (tomlkit, a
style-preserving TOML library, keeps them). The result carries the format mark.

What changes: a parameter whose value differs is rewritten in the writer's exact layout (a comment
at the end of its line stays); a new parameter goes after the last parameter of its table, a new
submodule after the last table of its parent; keys the module no longer has are dropped (comments
on their own lines stay: they may say more than the key did). A parameter whose stored text still
reads back as its value is left untouched, in whatever TOML form the user wrote it — judged by the
loader's own reader and the marked (exact) rule, because the result always carries the mark.

References: `${file:}`/`${pkg:}` stay when they still resolve (inside the checkpoint's folder) to
exactly the value being saved; otherwise the value is written inline, as promptimus 0.1 did.

Two shortcuts skip tomlkit: a file whose values all read back exactly as the module's (same keys,
no references) is kept byte for byte (the mark added if missing), and a file that is exactly what
the writer made (never hand-edited) has nothing to keep: the writer rewrites it.

An existing file that is not TOML (a merge conflict, a half-finished edit, not UTF-8) or is
marked with an unknown format is the user's work, not ours to overwrite: `save()` raises
`CheckpointSyntaxError`, leaves it as it is, and names the way out (fix or delete it, or
`save(path, keep_comments=False)` to replace it).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import (
    CheckpointError,
    CheckpointSyntaxError,
    CheckpointTooDeep,
    PromptimusError,
)
from .format import FORMAT_MARK, REFERENCE_SHAPE, check_nesting, is_exact_format, module_dict_parts
from .references import ReferenceContext, ResolvedModuleDict, resolve_string
from .values import check_value
from .write import checkpoint_text, render_module_dict, top_value

if TYPE_CHECKING:
    from tomlkit.container import Container

__all__ = ["not_toml", "update_checkpoint_text"]


def not_toml(source: str, detail: str) -> CheckpointSyntaxError:
    return CheckpointSyntaxError(
        f"Cannot save over {source}: the file exists but is not a TOML checkpoint ({detail}), so "
        "its comments cannot be kept. Fix or delete the file, or call "
        "save(path, keep_comments=False) to replace it with a fresh checkpoint."
    )


def _same_value(stored: Any, value: Any) -> bool:
    """Exact equality of checkpoint values: same types (1 is not 1.0 nor True), -0.0 is not
    0.0, nan equals nan, lists element by element."""
    if type(stored) is not type(value):
        return False
    if isinstance(value, float):
        if math.isnan(value):
            return math.isnan(stored)
        return stored == value and math.copysign(1.0, stored) == math.copysign(1.0, value)
    if isinstance(value, list):
        return len(stored) == len(value) and all(map(_same_value, stored, value))
    return bool(stored == value)


def _same_module(stored: Mapping[str, Any], module: Mapping[str, Any]) -> bool:
    left, right = stored.get("params", {}), module.get("params", {})
    if set(left) != set(right) or not all(_same_value(left[k], right[k]) for k in right):
        return False
    subs, wanted = stored.get("submodules", {}), module.get("submodules", {})
    return set(subs) == set(wanted) and all(_same_module(subs[k], wanted[k]) for k in wanted)


@dataclass
class _Edit:
    """Every new or changed item, in the writer's exact text. Strings become tomlkit items
    directly; other values and new tables are rendered into one text parsed in one go (one
    tomlkit parse per save, however many change). tomlkit writes an item's text back unchanged."""

    values: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    places: list[tuple[Any, str, str | None, tuple[str, Any]]] = field(default_factory=list)

    def put(self, container: Any, name: str, value: Any, after: str | None) -> None:
        """Set `container[name]`: in place if the key is there, else after key `after` (or
        before the container's first table)."""
        if isinstance(value, str):
            item: tuple[str, Any] = ("item", _string_item(value))
        else:
            item = ("ref", f"k{len(self.values)}")
            self.values.append(f"{item[1]} = {top_value(value)}\n")
        self.places.append((container, name, after, item))

    def add_table(self, container: Any, name: str, module: Mapping[str, Any], where: str) -> None:
        """Add the submodule `module` as a new table (with its subtables) at the container's end."""
        ref = f"t{len(self.tables)}"
        body = render_module_dict(module, [ref], where)[0]
        self.tables.append(f"\n[{ref}]\n{body}\n")
        self.places.append((container, name, None, ("ref", ref)))

    def apply(self, tomlkit: Any) -> None:
        if not self.places:
            return
        rendered = tomlkit.parse("".join(self.values) + "".join(self.tables))
        for container, name, after, (kind, payload) in self.places:
            item = rendered[payload] if kind == "ref" else payload
            body = _body(container)
            if name in container:
                container[name] = item  # tomlkit keeps the old item's place and line comment
            elif after is not None and body is not None and after in body:
                body._insert_after(after, name, item)
            else:
                container.add(name, item)  # a plain key goes before the container's first table


def _string_item(value: str) -> Any:
    """A tomlkit string item whose text is exactly the writer's (multi-line basic) text."""
    from tomlkit.items import String, StringType, Trivia

    text = top_value(value)  # '"""' newline, escaped value, newline '"""'
    parsed = ("$" + value if REFERENCE_SHAPE.fullmatch(value) else value) + "\n"
    return String(StringType.MLB, parsed, text[3:-3], Trivia())


def _body(container: Any) -> Container | None:
    from tomlkit.container import Container

    if isinstance(container, Container):
        return container
    value = getattr(container, "value", None)
    return value if isinstance(value, Container) else None


def _items(table: Any) -> dict[str, Any]:
    """The table's items by name, read off its body (tomlkit's lookup by name is slow)."""
    body = _body(table)
    if body is None:
        return {name: table[name] for name in table}
    found: dict[str, Any] = {}
    repeated: set[str] = set()
    for key, item in body.body:
        if key is not None:
            if key.key in found:
                repeated.add(key.key)
            found[key.key] = item
    for name in repeated:  # a table split over the file: tomlkit's proxy joins its parts
        found[name] = table[name]
    return found


def _is_section(item: Any) -> bool:
    """A `[table]`/`[[array]]` section (as opposed to a `key = value` line)."""
    from tomlkit.container import OutOfOrderTableProxy
    from tomlkit.items import AoT, Table

    return isinstance(item, Table | AoT | OutOfOrderTableProxy)


def _is_table(item: Any) -> bool:
    from tomlkit.container import OutOfOrderTableProxy
    from tomlkit.items import Table

    return isinstance(item, Table | OutOfOrderTableProxy)


class _Updater:
    def __init__(self, ctx: ReferenceContext) -> None:
        self.ctx = ctx
        self.edit = _Edit()

    def reads_as(self, stored: Any, value: Any, key: str) -> bool:
        """Does the stored TOML value read back (marked rule, references resolved) as `value`?"""
        if isinstance(stored, str):
            try:
                stored = resolve_string(stored, key, self.ctx)
            except CheckpointError:
                return False
            if isinstance(stored, ResolvedModuleDict):
                return False
        return _same_value(stored, value)

    def reference_holds(self, stored: Any, module: Mapping[str, Any], key: str) -> bool:
        if not isinstance(stored, str):
            return False
        try:
            resolved = resolve_string(stored, key, self.ctx)
        except CheckpointError:
            return False
        return isinstance(resolved, ResolvedModuleDict) and _same_module(resolved, module)

    def update(
        self, table: Any, stored: Mapping[str, Any], module: Mapping[str, Any], where: str
    ) -> None:
        """Make `table` (a tomlkit container) hold `module`; `stored` is its old content as the
        loader's parser (tomllib) reads it."""
        params, submodules = module_dict_parts(module, where or "root")
        for name in [k for k in table if k not in params and k not in submodules]:
            del table[name]
        items = _items(table)
        last_param = None
        for name, item in items.items():
            if name in params and not _is_section(item):
                last_param = name
        for name, value in params.items():
            key = f"{where}.{name}" if where else name
            check_value(value, f"Checkpoint key {key!r}")
            if name in items and not _is_section(items[name]):
                if not self.reads_as(stored.get(name), value, key):
                    self.edit.put(table, name, value, None)
                continue
            if name in items:  # a submodule became a parameter
                del table[name]
            self.edit.put(table, name, value, last_param)
            last_param = name
        for name, sub in submodules.items():
            key = f"{where}.{name}" if where else name
            old = stored.get(name)
            if name in items:
                if _is_table(items[name]) and isinstance(old, Mapping):
                    self.update(items[name], old, sub, key)
                    continue
                if self.reference_holds(old, sub, key):
                    continue
                del table[name]  # a parameter, inline table or stale reference
            self.edit.add_table(table, name, sub, key)


def _plain_module_dict(table: Mapping[str, Any]) -> dict[str, Any] | None:
    """The module dict a marked file holds, if it has no references (else None)."""
    params: dict[str, Any] = {}
    submodules: dict[str, Any] = {}
    for name, value in table.items():
        if isinstance(value, Mapping):
            sub = _plain_module_dict(value)
            if sub is None:
                return None
            submodules[name] = sub
            continue
        if isinstance(value, str):
            value = value[:-1] if value.endswith("\n") else value
            if REFERENCE_SHAPE.fullmatch(value):
                if not value.startswith("$$"):
                    return None
                value = value[1:]
        params[name] = value
    return {"params": params, "submodules": submodules}


def _is_writer_text(text: str, plain: Mapping[str, Any]) -> bool:
    """Is `text` exactly what the writer makes of its own content (no hand edits)?"""
    try:
        return checkpoint_text(plain) == text
    except PromptimusError:
        return False


def update_checkpoint_text(old_text: str, data: Mapping[str, Any], path: Path) -> str:
    """`old_text` updated to hold `data`, keeping its comments, layout and key order.

    Raises `CheckpointSyntaxError` if `old_text` is not TOML (the caller's file is then left as
    it is): a broken hand edit or merge conflict is the user's work, not something to overwrite.
    """
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    source = str(path)
    try:
        was_marked = is_exact_format(old_text, source)
    except CheckpointSyntaxError as exc:
        raise not_toml(source, str(exc)) from None
    try:
        stored = tomllib.loads(old_text)
        check_nesting(stored, source)
    except ValueError as exc:
        raise not_toml(source, str(exc)) from None
    except RecursionError:
        raise not_toml(source, "arrays nested thousands of levels deep") from None
    except CheckpointTooDeep as exc:
        raise not_toml(source, str(exc)) from None
    if not old_text.strip():
        return checkpoint_text(data)
    plain = _plain_module_dict(stored)
    if plain is not None and _same_module(plain, data):  # every value already reads back exactly
        return old_text if was_marked else f"{FORMAT_MARK}\n{old_text}"
    if was_marked and plain is not None and _is_writer_text(old_text, plain):
        return checkpoint_text(data)  # nothing of the user's to keep: the fast writer will do
    try:
        doc = tomlkit.parse(old_text)
    except TOMLKitError as exc:  # pragma: no cover - tomllib rejects what tomlkit rejects
        raise not_toml(source, str(exc)) from None
    base = path.resolve().parent
    ctx = ReferenceContext(base, (base,), (str(path.resolve()),), source, exact=True)
    updater = _Updater(ctx)
    updater.update(doc, stored, data, "")
    updater.edit.apply(tomlkit)
    text = doc.as_string()
    return text if was_marked else f"{FORMAT_MARK}\n{text}"
