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

import errno
import importlib.resources
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.parameters import Parameter
from ..errors import (
    CheckpointError,
    CheckpointMismatch,
    CheckpointReferenceError,
    CheckpointSyntaxError,
    CheckpointTooDeep,
    CheckpointWriteError,
    InvalidParameterValue,
    ReferenceTooLarge,
    UnsafeReference,
)
from .files import FileRefused, atomic_write_bytes, read_regular_file
from .limits import (
    DEFAULT_MAX_EXPANDED_CHARS,
    DEFAULT_MAX_FILE_BYTES,
    MAX_MODULE_DEPTH,
    MAX_VALUE_DEPTH,
)
from .values import check_value, copy_value, value_digest

if TYPE_CHECKING:
    from ..core.module import Module

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
        if len(path) - len(prefix) > MAX_MODULE_DEPTH:  # a looping or runaway dict
            raise CheckpointTooDeep(
                f"{'.'.join(named[:3])}...: the module dict nests more than {MAX_MODULE_DEPTH} "
                "submodules deep (promptimus.core.MAX_MODULE_DEPTH); no module tree is that deep."
            )
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


def check_nesting(data: dict[str, Any], source: str) -> None:
    """Refuse parsed TOML (plain dicts and lists, as tomllib returns) that nests tables deeper
    than a module tree or lists deeper than a value may be (`CheckpointTooDeep`), before any
    recursive walk meets it."""
    todo: list[tuple[Any, int, int]] = [(data, 0, 0)]  # (container, tables, lists) to it
    while todo:
        node, tables, lists = todo.pop()
        if tables > MAX_MODULE_DEPTH or lists > MAX_VALUE_DEPTH:
            what = (
                f"tables nested more than {MAX_MODULE_DEPTH} deep (the deepest a module tree "
                "may be, promptimus.core.MAX_MODULE_DEPTH)"
                if tables > MAX_MODULE_DEPTH
                else f"lists nested more than {MAX_VALUE_DEPTH} deep (the deepest a parameter "
                "value may be, promptimus.core.MAX_VALUE_DEPTH)"
            )
            raise CheckpointTooDeep(f"{source} has {what}; no module can load it.")
        for child in node.values() if type(node) is dict else node:
            kind = type(child)
            if kind is list or (kind is dict and lists):  # an inline table in an array: a level
                todo.append((child, tables, lists + 1))
            elif kind is dict:
                todo.append((child, tables + 1, lists))


def _parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except ValueError as exc:  # TOMLDecodeError, or an integer beyond Python's digit limit
        raise CheckpointSyntaxError(
            f"{source} is not valid TOML: {exc}. Fix the file at that line and load it again."
        ) from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise CheckpointTooDeep(
            f"{source} nests arrays or inline tables thousands of levels deep; no module can "
            f"load it (values nest at most {MAX_VALUE_DEPTH} deep)."
        ) from None
    check_nesting(data, source)
    return data


@dataclass
class _Expansion:
    """Shared by every file one load reads: the limits, and each referenced file's resolved
    value, so a file referenced from many places is read and resolved once."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_expanded_chars: int = DEFAULT_MAX_EXPANDED_CHARS
    resolved: dict[tuple[str, tuple[Path, ...]], Any] = field(default_factory=dict)


@dataclass
class _RefContext:
    base_dir: Path
    roots: tuple[Path, ...]
    stack: tuple[str, ...]
    source: str
    exact: bool = True  # format 2: drop one layout newline; else strip newlines as 0.1 did
    expansion: _Expansion = field(default_factory=_Expansion)


def _read_text(path: Path, limit: int) -> str:
    """UTF-8 text of a regular file of at most `limit` bytes (raises `FileRefused`, `OSError`,
    `UnicodeDecodeError`)."""
    return read_regular_file(path, limit).decode("utf-8")


def _refused(ctx: _RefContext, key: str, what: str, exc: FileRefused) -> CheckpointReferenceError:
    if "limit" in exc.reason:
        return ReferenceTooLarge(
            f"{ctx.source}: {key} references {what}, which {exc.reason}; shrink the file or "
            "pass a larger max_file_bytes to load()."
        )
    return CheckpointReferenceError(
        f"{ctx.source}: {key} references {what}, which {exc.reason}. Point the reference at a "
        "regular file."
    )


def _locate_file(target: str, key: str, ctx: _RefContext) -> Path:
    raw = Path(target)
    resolved = (raw if raw.is_absolute() else ctx.base_dir / raw).resolve()
    if not any(resolved.is_relative_to(root) for root in ctx.roots):
        raise UnsafeReference(
            f"{ctx.source}: {key} references {target!r}, which is outside the checkpoint's "
            f"folder {ctx.roots[0]}. Move the file inside it, or pass allow_paths=[...] to "
            "load() to allow that folder explicitly."
        )
    return resolved


def _read_file_reference(
    resolved: Path, target: str, key: str, ctx: _RefContext
) -> tuple[str, _RefContext]:
    try:
        text = _read_text(resolved, ctx.expansion.max_file_bytes)
    except FileRefused as exc:
        raise _refused(ctx, key, repr(target), exc) from None
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
    nested.expansion = ctx.expansion
    return text, nested


def _pkg_resource(target: str, key: str, ctx: _RefContext) -> Any:
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
        return importlib.resources.files(package).joinpath(f"{stem}.{rest}")
    except (ModuleNotFoundError, OSError, TypeError) as exc:
        raise CheckpointReferenceError(
            f"{ctx.source}: {key} references package file {target!r}, which cannot be read "
            f"({exc}); check that the package is installed and ships that file."
        ) from None


def _read_pkg_reference(
    resource: Any, target: str, key: str, ctx: _RefContext
) -> tuple[str, _RefContext]:
    limit = ctx.expansion.max_file_bytes
    what = f"package file {target!r}"
    try:
        if isinstance(resource, Path):  # an installed package on disk: the bounded reader
            text = _read_text(resource, limit)
        else:  # a zip import or another loader: bounded by reading at most limit + 1 bytes
            with resource.open("rb") as handle:
                data = handle.read(limit + 1)
            if len(data) > limit:
                raise FileRefused(f"is more than the limit of {limit} bytes")
            text = data.decode("utf-8")
    except FileRefused as exc:
        raise _refused(ctx, key, what, exc) from None
    except UnicodeDecodeError as exc:
        raise CheckpointReferenceError(
            f"{ctx.source}: {key} references {what}, which is not UTF-8 text "
            f"({exc.reason} at byte {exc.start}); save that file as UTF-8."
        ) from None
    except (OSError, TypeError) as exc:
        raise CheckpointReferenceError(
            f"{ctx.source}: {key} references {what}, which cannot be read "
            f"({exc}); check that the package is installed and ships that file."
        ) from None
    folder = Path(str(resource)).parent
    nested = _RefContext(folder, (folder.resolve(),), ctx.stack, f"pkg:{target}")
    nested.expansion = ctx.expansion
    return text, nested


class _ModuleDict(dict[str, Any]):
    """A module dict built by the reader (as opposed to a TOML table still to convert).
    `size` counts its characters with references expanded, `height` its levels of tables."""

    size: int = 0
    height: int = 0


def _drop_layout_newline(text: str) -> str:
    return text[:-1] if text.endswith("\n") else text


def _value_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):  # nesting already bounded by check_nesting
        return 1 + sum(_value_size(item) for item in value)
    return 1


def _resolve_string(value: str, key: str, ctx: _RefContext, depth: int = 0) -> Any:
    """The value a stored string stands for; `depth` is the number of tables above the one
    holding it (a `.toml` reference becomes a table one level deeper)."""
    value = _drop_layout_newline(value) if ctx.exact else value.strip("\n")
    if not _REFERENCE_SHAPE.fullmatch(value):
        return value
    if value.startswith("$$"):
        return value[1:]
    match = _REFERENCE.fullmatch(value)
    assert match is not None
    kind, target = match.groups()
    target = target.strip()
    location: Any
    if kind == "file":
        location = _locate_file(target, key, ctx)
        identity, roots = str(location), ctx.roots
    else:
        location = _pkg_resource(target, key, ctx)
        identity, roots = f"pkg:{target}", ()
    if identity in ctx.stack:
        chain = " -> ".join([*ctx.stack, identity])
        raise CheckpointReferenceError(f"Reference cycle: {chain}. Break the loop in those files.")
    cache = ctx.expansion.resolved
    result = cache.get((identity, roots))
    if result is None:
        if kind == "file":
            text, nested = _read_file_reference(location, target, key, ctx)
        else:
            text, nested = _read_pkg_reference(location, target, key, ctx)
        if identity.endswith(".toml"):
            nested.stack = (*ctx.stack, identity)
            nested.exact = is_exact_format(text, identity)
            result = _resolve_table(_parse_toml(text, identity), key, nested)
        else:
            result = _drop_layout_newline(text)
        cache[(identity, roots)] = result
    if isinstance(result, _ModuleDict) and depth + 1 + result.height > MAX_MODULE_DEPTH:
        raise CheckpointTooDeep(
            f"{ctx.source}: {key} references {identity}, whose tables reach "
            f"{depth + 1 + result.height} levels deep there, more than a module tree may be "
            f"({MAX_MODULE_DEPTH}, promptimus.core.MAX_MODULE_DEPTH)."
        )
    return result


def _resolve_table(
    table: Mapping[str, Any], prefix: str, ctx: _RefContext, depth: int = 0
) -> _ModuleDict:
    """Turn a parsed TOML table into a module dict, resolving references on the way. Nesting
    is bounded (check_nesting, and the height check on references), so recursion is safe."""
    params: dict[str, Any] = {}
    submodules: dict[str, Any] = {}
    size = height = 0
    for name, value in table.items():
        key = f"{prefix}.{name}" if prefix else name
        size += len(name) + 1
        if isinstance(value, str):
            value = _resolve_string(value, key, ctx, depth)
        if isinstance(value, Mapping):
            if not isinstance(value, _ModuleDict):  # a .toml reference is converted already
                value = _resolve_table(value, key, ctx, depth + 1)
            submodules[name] = value
            size += value.size
            height = max(height, value.height + 1)
        else:
            params[name] = value
            size += _value_size(value)
    limit = ctx.expansion.max_expanded_chars
    if size > limit:
        raise ReferenceTooLarge(
            f"{ctx.source}: {prefix or 'the checkpoint'} expands to more than {limit} characters "
            "with its ${file:}/${pkg:} references resolved (a file counts at every place that "
            "references it). Reference fewer or smaller files, or pass a larger "
            "max_expanded_chars to load()."
        )
    result = _ModuleDict(params=params, submodules=submodules)
    result.size, result.height = size, height
    return result


def _roots(base_dir: Path, allow_paths: Iterable[str | os.PathLike[str]]) -> tuple[Path, ...]:
    roots = [base_dir.resolve()]
    roots.extend(Path(p).resolve() for p in allow_paths)
    return tuple(roots)


def module_dict_from_toml_str(
    text: str,
    base_path: str | os.PathLike[str] | None = None,
    allow_paths: Iterable[str | os.PathLike[str]] = (),
    source: str = "checkpoint",
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_expanded_chars: int = DEFAULT_MAX_EXPANDED_CHARS,
) -> dict[str, Any]:
    """Parse checkpoint TOML into a module dict (`{"params", "submodules"}`).

    `${file:...}` references resolve against `base_path` (default: the current folder) and may not
    leave it unless a folder in `allow_paths` contains the target. Only regular files of at most
    `max_file_bytes` are read; the whole result, every reference expanded, may hold at most
    `max_expanded_chars` characters (`ReferenceTooLarge`). A file referenced from several places
    is read once, and those places share one (read-only) dict.
    """
    base = Path(base_path) if base_path is not None else Path.cwd()
    ctx = _RefContext(base, _roots(base, allow_paths), (), source, is_exact_format(text, source))
    ctx.expansion = _Expansion(max_file_bytes, max_expanded_chars)
    return _resolve_table(_parse_toml(text, source), "", ctx)


def read_checkpoint(
    path: Path,
    allow_paths: Iterable[str | os.PathLike[str]] = (),
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_expanded_chars: int = DEFAULT_MAX_EXPANDED_CHARS,
) -> dict[str, Any]:
    try:
        text = _read_text(path, max_file_bytes)
    except FileRefused as exc:
        if "limit" in exc.reason:
            raise ReferenceTooLarge(
                f"Checkpoint {path} {exc.reason}; pass a larger max_file_bytes to load()."
            ) from None
        raise CheckpointError(f"Cannot read checkpoint {path}: it {exc.reason}.") from None
    except UnicodeDecodeError as exc:
        raise CheckpointSyntaxError(f"{path} is not UTF-8 text ({exc.reason}).") from None
    except OSError as exc:
        raise CheckpointError(f"Cannot read checkpoint {path}: {exc.strerror or exc}.") from None
    base = path.resolve().parent
    stack = (str(path.resolve()),)
    ctx = _RefContext(
        base, _roots(base, allow_paths), stack, str(path), is_exact_format(text, str(path))
    )
    ctx.expansion = _Expansion(max_file_bytes, max_expanded_chars)
    return _resolve_table(_parse_toml(text, str(path)), "", ctx)


def atomic_write_text(path: Path, text: str) -> None:
    """Write UTF-8 text so that readers see the old file or the new one, never a mix. Every
    failure is a `CheckpointWriteError`; the old file is then left as it was."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CheckpointWriteError(
            f"Cannot save checkpoint {path}: the text has an unpaired surrogate "
            f"({text[max(exc.start - 20, 0) : exc.start]!r} is followed by one), which UTF-8 "
            "cannot hold; rename the key or fix the value that has it."
        ) from None
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        if isinstance(exc, IsADirectoryError) or path.is_dir():
            hint = "it is a folder; save to a file path inside it instead"
        elif exc.errno == errno.EFBIG:
            hint = "the file would exceed the file-size limit (ulimit -f); raise the limit"
        elif exc.errno == errno.ENOSPC:
            hint = "the disk is full; free some space"
        elif not path.parent.is_dir():
            hint = f"the folder {path.parent} does not exist; create that folder first"
        else:
            hint = "check that the folder is writable"
        raise CheckpointWriteError(
            f"Cannot save checkpoint {path}: {exc.strerror or exc}; {hint}. The previous file, "
            "if any, is unchanged."
        ) from exc


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
