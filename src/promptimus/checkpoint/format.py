"""What a checkpoint text is: the module dict shape, the format mark that selects the reading
rule, the shape of a reference, and parsing TOML with its nesting bounded.

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

A string parameter whose whole value is `${file:relative/path}` or `${pkg:package.module.file.ext}`
is a reference (see `references`). A literal value of that shape is written with one extra
leading `$` and read back without it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from typing import Any

from ..errors import CheckpointMismatch, CheckpointSyntaxError, CheckpointTooDeep
from .limits import MAX_MODULE_DEPTH, MAX_VALUE_DEPTH

__all__ = [
    "FORMAT_MARK",
    "REFERENCE",
    "REFERENCE_SHAPE",
    "check_nesting",
    "is_exact_format",
    "marked",
    "module_dict_parts",
    "parse_toml",
]

REFERENCE_SHAPE = re.compile(r"\$+\{(?:file|pkg):.*\}", re.DOTALL)
REFERENCE = re.compile(r"\$\{(file|pkg):(.*)\}", re.DOTALL)


def module_dict_parts(
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


def marked(body: str) -> str:
    """`body` (checkpoint text without a mark) preceded by the format mark."""
    return f"{FORMAT_MARK}\n\n{body}" if body else f"{FORMAT_MARK}\n"


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


def parse_toml(text: str, source: str) -> dict[str, Any]:
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
