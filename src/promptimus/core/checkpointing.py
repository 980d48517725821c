"""The path promptimus 0.1 (and the CLI) import checkpoint text functions from; the code lives in
`promptimus.checkpoint`."""

from ..checkpoint import module_dict_from_toml_str, module_dict_to_toml_str, read_checkpoint

__all__ = ["module_dict_from_toml_str", "module_dict_to_toml_str", "read_checkpoint"]
