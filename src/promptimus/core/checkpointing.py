"""TOML checkpoints: exact writing, validated all-or-nothing loading, safe file references.

Module dicts keep the original promptimus shape: `{"params": {name: value}, "submodules":
{name: module_dict}}`. The TOML layout is the original's too: a module's parameters first, in
registration order — strings as multi-line basic strings that open and close on their own lines,
everything else as native TOML — then one `[dotted.path]` table per submodule.

Two reading rules, told apart by a mark, never by guessing from the values:

- Format 2 (ours): the file's header (the comment lines before the first key or table) holds the
  line `# promptimus checkpoint format=2`. A string is written as triple quote, newline, text,
  newline, triple quote; on reading, the newline before the closing delimiter belongs to the
  layout and is dropped (TOML already drops the one after the opening delimiter). Every string
  therefore round-trips exactly — leading and trailing newlines, quotes, backslashes, control
  characters.
- Unmarked files are read as promptimus 0.1 read them: newlines at both ends of every string
  parameter are layout and are stripped. (0.1 with tomlkit 0.15 writes a blank line after the
  opening quotes; this rule reads such files as 0.1 does.) Strings inside lists are read as is.

`save()`/`describe()` always mark. `module_dict_to_toml_str` marks only when a string parameter
starts or ends with a newline, the one case the two rules read differently; otherwise its text is
the unmarked layout 0.1 wrote, and either way `module_dict_from_toml_str` reads it back exactly.
0.1 reads our files too: it ignores the mark (a comment) and strips edge newlines, so it loses
only those, which its format cannot hold.

A string parameter whose whole value is `${file:relative/path}` or `${pkg:package.module.file.ext}`
is a reference: a `.toml` target becomes the submodule at that place (read with the rule its own
mark selects, as 0.1 read every referenced file with its own rule), any other file becomes the
string value (minus one final newline, in both formats: 0.1 had no text references). A literal
value of that shape is written with one extra leading `$` and read back without it.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import math
import os
import re
import tempfile
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import (
    CheckpointError,
    CheckpointMismatch,
    CheckpointReferenceError,
    CheckpointSyntaxError,
    InvalidParameterValue,
    UnsafeReference,
)
from .parameters import Parameter, check_value, copy_value, value_digest

if TYPE_CHECKING:
    from .module import Module

# --------------------------------------------------------------------------------------- writing

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_REFERENCE_SHAPE = re.compile(r"\$+\{(?:file|pkg):.*\}", re.DOTALL)
_REFERENCE = re.compile(r"\$\{(file|pkg):(.*)\}", re.DOTALL)
_SHORT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f"}
_SHORT_ESCAPES["\r"] = "\\r"


def _is_control(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or code == 0x7F


def _escape_char(ch: str) -> str:
    return _SHORT_ESCAPES.get(ch) or f"\\u{ord(ch):04X}"


def _basic_string(text: str) -> str:
    out = [_escape_char(ch) if (_is_control(ch) or ch in '\\"') else ch for ch in text]
    return '"' + "".join(out) + '"'


def _multiline_string(text: str) -> str:
    # A newline right after the opening delimiter is dropped by TOML, so the value starts on the
    # next line whatever it begins with. CR is escaped because parsers may normalise CRLF.
    parts: list[str] = []
    quotes = 0  # raw quotes just emitted; a third would close the string
    for ch in text:
        if ch == '"':
            if quotes == 2:
                parts.append('\\"')
                quotes = 0
            else:
                parts.append('"')
                quotes += 1
            continue
        quotes = 0
        if ch == "\\" or ch == "\r" or (_is_control(ch) and ch not in "\t\n"):
            parts.append(_escape_char(ch))
        else:
            parts.append(ch)
    return '"""\n' + "".join(parts) + '\n"""'


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _basic_string(name)


def _inline_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    # int()/float() first: subclasses (numpy.float64, IntFlag, ...) may repr as non-TOML text
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(float(value))
    if isinstance(value, str):
        return _basic_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_inline_value(item) for item in value) + "]"
    raise InvalidParameterValue(f"Cannot write a {type(value).__name__} to a TOML checkpoint.")


def _top_value(value: Any) -> str:
    if isinstance(value, str):
        if _REFERENCE_SHAPE.fullmatch(value):
            value = "$" + value
        return _multiline_string(value)
    return _inline_value(value)


def _module_dict_parts(
    data: Mapping[str, Any], where: str
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    extra = set(data) - {"params", "submodules"}
    if extra:
        raise CheckpointMismatch(
            f"{where}: a module dict has only 'params' and 'submodules' keys (as "
            f"`Module.serialize()` returns), got {sorted(extra)}."
        )
    params, submodules = data.get("params", {}), data.get("submodules", {})
    if not isinstance(params, Mapping) or not isinstance(submodules, Mapping):
        raise CheckpointMismatch(f"{where}: 'params' and 'submodules' must both be dicts.")
    return params, submodules


FORMAT_MARK = "# promptimus checkpoint format=2"
_HEADER = re.compile(r"(?:[ \t\r]*(?:#[^\n]*)?\n)*")
_MARK = re.compile(r"^[ \t]*#[ \t]*promptimus checkpoint format=(\S*)[ \t\r]*$", re.MULTILINE)


def is_exact_format(text: str, source: str = "checkpoint") -> bool:
    """True for a file marked format 2 (exact strings), False for an unmarked (0.1) file.

    Raises `CheckpointSyntaxError` for a format number this version does not know.
    """
    header = _HEADER.match(text)
    assert header is not None  # the pattern matches the empty string
    mark = _MARK.search(text, 0, header.end())
    if mark is None:
        return False
    if mark.group(1) != "2":
        raise CheckpointSyntaxError(
            f"{source} is marked 'promptimus checkpoint format={mark.group(1)}', which this "
            "version of promptimus cannot read (it reads format 2 and unmarked promptimus 0.1 "
            "files). Upgrade promptimus to read it."
        )
    return True


def _edge_newline(value: str) -> bool:
    return value.startswith("\n") or value.endswith("\n")


def render_module_dict(
    data: Mapping[str, Any], path: Iterable[str] = (), where: str = ""
) -> tuple[str, bool]:
    """The unmarked checkpoint text of a module dict whose tables sit under `path`, and whether
    a string parameter in it starts or ends with a newline (so only the marked rule reads it).
    Errors name keys as if the dict sat at `where` (default: `path`)."""
    lines: list[str] = []
    edge = False

    prefix = list(path)
    shown = where.split(".") if where else prefix

    def emit(module: Mapping[str, Any], path: list[str]) -> None:
        nonlocal edge
        named = shown + path[len(prefix) :]
        params, submodules = _module_dict_parts(module, ".".join(named) or "root")
        for name, value in params.items():
            check_value(value, f"Checkpoint key {'.'.join([*named, name])!r}")
            if isinstance(value, str) and not edge:
                edge = _edge_newline(value)
            lines.append(f"{_key(name)} = {_top_value(value)}")
            lines.append("")
        for name, sub in submodules.items():
            sub_path = [*path, name]
            lines.append("")
            lines.append("[" + ".".join(_key(part) for part in sub_path) + "]")
            emit(sub, sub_path)

    emit(data, prefix)
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return ("\n".join(lines) + "\n" if lines else ""), edge


def marked(body: str) -> str:
    """`body` (checkpoint text without a mark) preceded by the format mark."""
    return f"{FORMAT_MARK}\n\n{body}" if body else f"{FORMAT_MARK}\n"


def module_dict_to_toml_str(data: Mapping[str, Any]) -> str:
    """Render a module dict (`{"params": ..., "submodules": ...}`) as checkpoint TOML.

    The text carries the format mark only when a string parameter starts or ends with a newline;
    otherwise it is exactly what promptimus 0.1 wrote. `module_dict_from_toml_str` reads it back
    exactly either way.
    """
    body, edge = render_module_dict(data)
    return marked(body) if edge else body


def checkpoint_text(data: Mapping[str, Any]) -> str:
    """The text `save()` writes to a new file: always marked, so hand edits stay exact too."""
    return marked(render_module_dict(data)[0])


# --------------------------------------------------------------------------------------- reading


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except ValueError as exc:  # TOMLDecodeError, or an integer beyond Python's digit limit
        raise CheckpointSyntaxError(
            f"{source} is not valid TOML: {exc}. Fix the file at that line and load it again."
        ) from None


@dataclass
class _RefContext:
    base_dir: Path
    roots: tuple[Path, ...]
    stack: tuple[str, ...]
    source: str
    exact: bool = True  # format 2: drop one layout newline; else strip newlines as 0.1 did


def _read_file_reference(target: str, key: str, ctx: _RefContext) -> tuple[str, str, _RefContext]:
    assert ctx.base_dir is not None
    raw = Path(target)
    resolved = (raw if raw.is_absolute() else ctx.base_dir / raw).resolve()
    if not any(resolved.is_relative_to(root) for root in ctx.roots):
        raise UnsafeReference(
            f"{ctx.source}: {key} references {target!r}, which is outside the checkpoint's "
            f"folder {ctx.roots[0]}. Move the file inside it, or pass allow_paths=[...] to "
            "load() to allow that folder explicitly."
        )
    try:
        text = resolved.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointReferenceError(
            f"{ctx.source}: {key} references {target!r}, which is not UTF-8 text "
            f"({exc.reason} at byte {exc.start}); save that file as UTF-8."
        ) from None
    except OSError as exc:
        raise CheckpointReferenceError(
            f"{ctx.source}: {key} references {target!r}, which cannot be read "
            f"({exc.strerror or exc}); check the path (relative to {ctx.base_dir})."
        ) from None
    nested = _RefContext(resolved.parent, ctx.roots, ctx.stack, str(resolved))
    return str(resolved), text, nested


def _read_pkg_reference(target: str, key: str, ctx: _RefContext) -> tuple[str, str, _RefContext]:
    package, _, rest = target.rpartition(".")
    package, _, stem = package.rpartition(".")
    if not package or not stem or not rest:
        raise CheckpointReferenceError(
            f"{ctx.source}: {key} has ${{pkg:{target}}}; write it as "
            "${pkg:package.subpackage.file.ext} (the last two parts are the file name)."
        )
    if any(sep in f"{stem}.{rest}" for sep in ("/", "\\")):
        # a path there would let joinpath leave the package (an absolute one replaces it)
        raise UnsafeReference(
            f"{ctx.source}: {key} has ${{pkg:{target}}}, whose file name contains a path "
            "separator; a package reference names a file in the package folder, written as "
            "${pkg:package.subpackage.file.ext}. Use ${file:...} for other files."
        )
    try:
        resource = importlib.resources.files(package).joinpath(f"{stem}.{rest}")
        text = resource.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointReferenceError(
            f"{ctx.source}: {key} references package file {target!r}, which is not UTF-8 text "
            f"({exc.reason} at byte {exc.start}); save that file as UTF-8."
        ) from None
    except (ModuleNotFoundError, OSError, TypeError) as exc:
        raise CheckpointReferenceError(
            f"{ctx.source}: {key} references package file {target!r}, which cannot be read "
            f"({exc}); check that the package is installed and ships that file."
        ) from None
    folder = Path(str(resource)).parent
    nested = _RefContext(folder, (folder.resolve(),), ctx.stack, f"pkg:{target}")
    return f"pkg:{target}", text, nested


class _ModuleDict(dict[str, Any]):
    """A module dict built by the reader (as opposed to a TOML table still to convert)."""


def _drop_layout_newline(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


def _resolve_string(value: str, key: str, ctx: _RefContext) -> Any:
    value = _drop_layout_newline(value) if ctx.exact else value.strip("\n")
    if not _REFERENCE_SHAPE.fullmatch(value):
        return value
    if value.startswith("$$"):
        return value[1:]
    match = _REFERENCE.fullmatch(value)
    assert match is not None
    kind, target = match.groups()
    reader = _read_file_reference if kind == "file" else _read_pkg_reference
    identity, text, nested = reader(target.strip(), key, ctx)
    if identity in ctx.stack:
        chain = " -> ".join([*ctx.stack, identity])
        raise CheckpointReferenceError(f"Reference cycle: {chain}. Break the loop in those files.")
    if not identity.endswith(".toml"):
        return _drop_layout_newline(text)
    nested.stack = (*ctx.stack, identity)
    nested.exact = is_exact_format(text, identity)
    return _resolve_table(_parse_toml(text, identity), key, nested)


def _resolve_table(table: Mapping[str, Any], prefix: str, ctx: _RefContext) -> dict[str, Any]:
    """Turn a parsed TOML table into a module dict, resolving references on the way."""
    params: dict[str, Any] = {}
    submodules: dict[str, Any] = {}
    for name, value in table.items():
        key = f"{prefix}.{name}" if prefix else name
        if isinstance(value, str):
            value = _resolve_string(value, key, ctx)
        if isinstance(value, Mapping):
            resolved = isinstance(value, _ModuleDict)  # a .toml reference, already converted
            submodules[name] = value if resolved else _resolve_table(value, key, ctx)
        else:
            params[name] = value
    return _ModuleDict(params=params, submodules=submodules)


def _roots(base_dir: Path, allow_paths: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    roots = [base_dir.resolve()]
    roots.extend(Path(p).resolve() for p in allow_paths)
    return tuple(roots)


def module_dict_from_toml_str(
    text: str,
    base_path: str | os.PathLike[str] | None = None,
    allow_paths: Iterable[str | os.PathLike[str]] = (),
    source: str = "checkpoint",
) -> dict[str, Any]:
    """Parse checkpoint TOML into a module dict (`{"params", "submodules"}`).

    `${file:...}` references resolve against `base_path` (default: the current folder) and may not
    leave it unless a folder in `allow_paths` contains the target.
    """
    base = Path(base_path) if base_path is not None else Path.cwd()
    ctx = _RefContext(base, _roots(base, allow_paths), (), source, is_exact_format(text, source))
    return _resolve_table(_parse_toml(text, source), "", ctx)


def read_checkpoint(
    path: Path, allow_paths: Iterable[str | os.PathLike[str]] = ()
) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointSyntaxError(f"{path} is not UTF-8 text ({exc.reason}).") from None
    except OSError as exc:
        raise CheckpointError(f"Cannot read checkpoint {path}: {exc.strerror or exc}.") from None
    base = path.resolve().parent
    stack = (str(path.resolve()),)
    ctx = _RefContext(
        base, _roots(base, allow_paths), stack, str(path), is_exact_format(text, str(path))
    )
    return _resolve_table(_parse_toml(text, str(path)), "", ctx)


def atomic_write_text(path: Path, text: str) -> None:
    """Write UTF-8 text so that readers see the old file or the new one, never a mix."""
    data = text.encode("utf-8")
    directory = path.parent if path.parent != Path("") else Path(".")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise CheckpointError(
            f"Cannot save checkpoint {path}: cannot create a file in {directory} "
            f"({exc.strerror or exc}); create that folder or make it writable."
        ) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            mode = 0o644
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_name)
        raise
    if hasattr(os, "O_DIRECTORY"):
        with contextlib.suppress(OSError):
            dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


# --------------------------------------------------------------------------------------- loading


@dataclass
class LoadPlan:
    """Everything a load would change, computed before anything is changed."""

    assignments: dict[int, tuple[Parameter[Any], Any, str]] = field(default_factory=dict)
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


def _fit(param: Parameter[Any], value: Any, key: str) -> Any:
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


def plan_load(module: Module, data: Mapping[str, Any], strict: bool = True) -> LoadPlan:
    """Validate a module dict against `module`'s tree; raise `CheckpointMismatch` listing every
    problem, or return the plan whose `apply()` changes everything at once."""
    plan = LoadPlan()
    base = module.path  # errors name absolute paths; missing/unexpected keep relative keys

    def relative(key: str) -> str:
        return key[len(base) + 1 :]

    def walk(node: Module, module_dict: Mapping[str, Any], prefix: str) -> None:
        if not isinstance(module_dict, Mapping):
            plan.errors.append(f"{prefix}: is a submodule, but the checkpoint has a value")
            return
        try:
            params, submodules = _module_dict_parts(module_dict, prefix)
        except CheckpointMismatch as exc:
            plan.errors.append(str(exc))
            return
        for name, value in params.items():
            key = f"{prefix}.{name}"
            param = node._parameters.get(name)
            if param is None:
                if name in node._submodules:
                    plan.errors.append(f"{key}: is a submodule, but the checkpoint has a value")
                else:
                    plan.unexpected.append(relative(key))
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
                plan.missing.append(relative(f"{prefix}.{name}"))
        for name, value in submodules.items():
            key = f"{prefix}.{name}"
            child = node._submodules.get(name)
            if child is None:
                if name in node._parameters:
                    plan.errors.append(f"{key}: is a parameter, but the checkpoint has a table")
                else:
                    plan.unexpected.append(relative(key))
                continue
            walk(child, value, key)
        for name, child in node._submodules.items():
            if name not in submodules:
                walk(child, {}, f"{prefix}.{name}")

    if not isinstance(data, Mapping):
        raise CheckpointMismatch(f"A checkpoint must be a module dict, got {type(data).__name__}.")
    walk(module, data, base)
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
    if problems:
        hint = (
            "\nPass strict=False to load the matching keys and skip unknown/missing ones."
            if strict and (plan.unexpected or plan.missing) and not plan.errors
            else ""
        )
        raise CheckpointMismatch(
            "Checkpoint does not fit the module; nothing was loaded:\n- "
            + "\n- ".join(problems)
            + hint
        )
    return plan
