"""A checkpoint read without its module class: flat parameters and the tree's digest."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..board.parameter_diff import flat_parameters
from ..checkpoint.read import read_checkpoint
from ..core.parameters import value_digest
from .command_error import CommandLineError

__all__ = ["dict_digest", "flat_parameters", "load_module_dict"]


def load_module_dict(path: str) -> dict[str, Any]:
    """The module dict of the checkpoint at `path` (references resolved, format mark honoured)."""
    file = Path(path)
    if not file.exists():
        raise CommandLineError(f"{path}: no such file. Check the path to the checkpoint.")
    if file.is_dir():
        raise CommandLineError(f"{path} is a folder; give the path of a .toml checkpoint.")
    return read_checkpoint(file)


def dict_digest(data: Mapping[str, Any]) -> str:
    """What `Module.digest()` returns for a tree holding exactly these values."""
    h = hashlib.sha256()
    params, submodules = data.get("params", {}), data.get("submodules", {})
    for name in sorted(params):
        h.update(f"p:{name}={value_digest(params[name])};".encode())
    for name in sorted(submodules):
        h.update(f"m:{name}={dict_digest(submodules[name])};".encode())
    return h.hexdigest()
