"""The core: modules, parameters, containers, hooks, sessions. Knows no provider, no HTTP, no
OpenAI. `Module.save/load` read and write checkpoints through `promptimus.checkpoint`, the tier
below."""

from ..checkpoint import (
    DEFAULT_MAX_EXPANDED_CHARS,
    DEFAULT_MAX_FILE_BYTES,
    MAX_MODULE_DEPTH,
    MAX_VALUE_DEPTH,
    module_dict_from_toml_str,
    module_dict_to_toml_str,
)
from .containers import ModuleDict, ModuleList
from .hooks import RemovableHandle, register_module_call_interceptor
from .module import IncompatibleKeys, Module
from .parameters import Parameter
from .session import Session, current_session

__all__ = [
    "DEFAULT_MAX_EXPANDED_CHARS",
    "DEFAULT_MAX_FILE_BYTES",
    "MAX_MODULE_DEPTH",
    "MAX_VALUE_DEPTH",
    "IncompatibleKeys",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "RemovableHandle",
    "Session",
    "current_session",
    "module_dict_from_toml_str",
    "module_dict_to_toml_str",
    "register_module_call_interceptor",
]
