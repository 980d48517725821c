"""Checkpoints: one readable TOML file per module tree, and the values it can hold.

This package works on plain data — module dicts (`{"params": {name: value}, "submodules":
{name: module_dict}}`), parameter values, paths — and knows no `Module` class: the core imports
it (for `Module.save/load/load_dict/describe`), never the other way round. It sits directly
below the core and above `errors`. One job per module, bottom to top:

- `limits`: the size and depth limits of trees, values and checkpoints;
- `values`: what a parameter can hold (`check_value`, `copy_value`, `value_digest`, `UNSET`);
- `files`: bounded reads of regular files only, and the one atomic writer everyone uses;
- `format`: the module dict shape, the format mark and its two reading rules, bounded parsing;
- `write`: exact checkpoint text, fast, without a TOML library;
- `references`: `${file:...}`/`${pkg:...}` resolution while parsed TOML becomes module dicts;
- `read`: a checkpoint text or file to a module dict;
- `plan`: a module dict checked against a tree first, then applied all at once (or not at all);
- `update`: an existing file's values changed in place, its comments and layout kept;
- `save`: a fresh write or an in-place update, written atomically.
"""

from .files import atomic_write_bytes, atomic_write_text, read_regular_file
from .format import FORMAT_MARK, is_exact_format
from .limits import (
    DEFAULT_MAX_EXPANDED_CHARS,
    DEFAULT_MAX_FILE_BYTES,
    MAX_MODULE_DEPTH,
    MAX_VALUE_DEPTH,
)
from .plan import LoadPlan, ModuleLike, ParameterLike, plan_load
from .read import module_dict_from_toml_str, read_checkpoint
from .save import save_checkpoint
from .update import update_checkpoint_text
from .values import UNSET, check_value, copy_value, value_digest
from .write import checkpoint_text, module_dict_to_toml_str, render_module_dict

__all__ = [
    "DEFAULT_MAX_EXPANDED_CHARS",
    "DEFAULT_MAX_FILE_BYTES",
    "FORMAT_MARK",
    "MAX_MODULE_DEPTH",
    "MAX_VALUE_DEPTH",
    "UNSET",
    "LoadPlan",
    "ModuleLike",
    "ParameterLike",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_value",
    "checkpoint_text",
    "copy_value",
    "is_exact_format",
    "module_dict_from_toml_str",
    "module_dict_to_toml_str",
    "plan_load",
    "read_checkpoint",
    "read_regular_file",
    "render_module_dict",
    "save_checkpoint",
    "update_checkpoint_text",
    "value_digest",
]
