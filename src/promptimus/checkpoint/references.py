"""Resolving `${file:...}` and `${pkg:...}` references while turning parsed TOML into module dicts.

A `.toml` target becomes the submodule at that place (read with the rule its own mark selects, as
0.1 read every referenced file with its own rule), any other file becomes the string value (minus
one final newline, in both formats: 0.1 had no text references). `${file:}` targets may not leave
the checkpoint's folder unless a folder the caller allows contains them; only regular files are
read, each at most `max_file_bytes`, and the result with every reference expanded is bounded by
`max_expanded_chars`. A file referenced from many places is read and resolved once per load.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import (
    CheckpointReferenceError,
    CheckpointTooDeep,
    FileRefused,
    FileTooLarge,
    ReferenceTooLarge,
    UnsafeReference,
)
from .files import read_text
from .format import REFERENCE, REFERENCE_SHAPE, is_exact_format, parse_toml
from .limits import DEFAULT_MAX_EXPANDED_CHARS, DEFAULT_MAX_FILE_BYTES, MAX_MODULE_DEPTH

__all__ = [
    "Expansion",
    "ReferenceContext",
    "ResolvedModuleDict",
    "resolve_string",
    "resolve_table",
]


@dataclass
class Expansion:
    """Shared by every file one load reads: the limits, and each referenced file's resolved
    value, so a file referenced from many places is read and resolved once."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_expanded_chars: int = DEFAULT_MAX_EXPANDED_CHARS
    resolved: dict[tuple[str, tuple[Path, ...]], Any] = field(default_factory=dict)


@dataclass
class ReferenceContext:
    base_dir: Path
    roots: tuple[Path, ...]
    stack: tuple[str, ...]
    source: str
    exact: bool = True  # format 2: drop one layout newline; else strip newlines as 0.1 did
    expansion: Expansion = field(default_factory=Expansion)


def _refused(
    ctx: ReferenceContext, key: str, what: str, exc: FileRefused
) -> CheckpointReferenceError:
    if isinstance(exc, FileTooLarge):
        return ReferenceTooLarge(
            f"{ctx.source}: {key} references {what}, which {exc.reason}; shrink the file or "
            "pass a larger max_file_bytes to load()."
        )
    return CheckpointReferenceError(
        f"{ctx.source}: {key} references {what}, which {exc.reason}. Point the reference at a "
        "regular file."
    )


def _locate_file(target: str, key: str, ctx: ReferenceContext) -> Path:
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
    resolved: Path, target: str, key: str, ctx: ReferenceContext
) -> tuple[str, ReferenceContext]:
    try:
        text = read_text(resolved, ctx.expansion.max_file_bytes)
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
    nested = ReferenceContext(resolved.parent, ctx.roots, ctx.stack, str(resolved))
    nested.expansion = ctx.expansion
    return text, nested


def _pkg_resource(target: str, key: str, ctx: ReferenceContext) -> Any:
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
    resource: Any, target: str, key: str, ctx: ReferenceContext
) -> tuple[str, ReferenceContext]:
    limit = ctx.expansion.max_file_bytes
    what = f"package file {target!r}"
    try:
        if isinstance(resource, Path):  # an installed package on disk: the bounded reader
            text = read_text(resource, limit)
        else:  # a zip import or another loader: bounded by reading at most limit + 1 bytes
            with resource.open("rb") as handle:
                data = handle.read(limit + 1)
            if len(data) > limit:
                raise FileTooLarge(f"is more than the limit of {limit} bytes")
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
    nested = ReferenceContext(folder, (folder.resolve(),), ctx.stack, f"pkg:{target}")
    nested.expansion = ctx.expansion
    return text, nested


class ResolvedModuleDict(dict[str, Any]):
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


def resolve_string(value: str, key: str, ctx: ReferenceContext, depth: int = 0) -> Any:
    """The value a stored string stands for; `depth` is the number of tables above the one
    holding it (a `.toml` reference becomes a table one level deeper)."""
    value = _drop_layout_newline(value) if ctx.exact else value.strip("\n")
    if not REFERENCE_SHAPE.fullmatch(value):
        return value
    if value.startswith("$$"):
        return value[1:]
    match = REFERENCE.fullmatch(value)
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
            result = resolve_table(parse_toml(text, identity), key, nested)
        else:
            result = _drop_layout_newline(text)
        cache[(identity, roots)] = result
    if isinstance(result, ResolvedModuleDict) and depth + 1 + result.height > MAX_MODULE_DEPTH:
        raise CheckpointTooDeep(
            f"{ctx.source}: {key} references {identity}, whose tables reach "
            f"{depth + 1 + result.height} levels deep there, more than a module tree may be "
            f"({MAX_MODULE_DEPTH}, promptimus.core.MAX_MODULE_DEPTH)."
        )
    return result


def resolve_table(
    table: Mapping[str, Any], prefix: str, ctx: ReferenceContext, depth: int = 0
) -> ResolvedModuleDict:
    """Turn a parsed TOML table into a module dict, resolving references on the way. Nesting
    is bounded (check_nesting, and the height check on references), so recursion is safe."""
    params: dict[str, Any] = {}
    submodules: dict[str, Any] = {}
    size = height = 0
    for name, value in table.items():
        key = f"{prefix}.{name}" if prefix else name
        size += len(name) + 1
        if isinstance(value, str):
            value = resolve_string(value, key, ctx, depth)
        if isinstance(value, Mapping):
            if not isinstance(value, ResolvedModuleDict):  # a .toml reference is converted already
                value = resolve_table(value, key, ctx, depth + 1)
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
    result = ResolvedModuleDict(params=params, submodules=submodules)
    result.size, result.height = size, height
    return result
