"""Reading a checkpoint: its text parsed with the rule its mark selects, references resolved,
into a module dict (`{"params": ..., "submodules": ...}`); see `format` and `references`."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import (
    CheckpointError,
    CheckpointSyntaxError,
    FileTooLarge,
    NotARegularFile,
    ReferenceTooLarge,
)
from .files import read_text
from .format import is_exact_format, parse_toml
from .limits import DEFAULT_MAX_EXPANDED_CHARS, DEFAULT_MAX_FILE_BYTES
from .references import Expansion, ReferenceContext, resolve_table

__all__ = ["module_dict_from_toml_str", "read_checkpoint"]


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
    ctx = ReferenceContext(
        base, _roots(base, allow_paths), (), source, is_exact_format(text, source)
    )
    ctx.expansion = Expansion(max_file_bytes, max_expanded_chars)
    return resolve_table(parse_toml(text, source), "", ctx)


def read_checkpoint(
    path: Path,
    allow_paths: Iterable[str | os.PathLike[str]] = (),
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_expanded_chars: int = DEFAULT_MAX_EXPANDED_CHARS,
) -> dict[str, Any]:
    try:
        text = read_text(path, max_file_bytes)
    except FileTooLarge as exc:
        raise ReferenceTooLarge(
            f"Checkpoint {path} {exc.reason}; pass a larger max_file_bytes to load()."
        ) from None
    except NotARegularFile as exc:
        raise CheckpointError(f"Cannot read checkpoint {path}: it {exc.reason}.") from None
    except UnicodeDecodeError as exc:
        raise CheckpointSyntaxError(f"{path} is not UTF-8 text ({exc.reason}).") from None
    except OSError as exc:
        raise CheckpointError(f"Cannot read checkpoint {path}: {exc.strerror or exc}.") from None
    base = path.resolve().parent
    stack = (str(path.resolve()),)
    ctx = ReferenceContext(
        base, _roots(base, allow_paths), stack, str(path), is_exact_format(text, str(path))
    )
    ctx.expansion = Expansion(max_file_bytes, max_expanded_chars)
    return resolve_table(parse_toml(text, str(path)), "", ctx)
