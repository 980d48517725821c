"""The core: modules, parameters, checkpoints. Knows no provider, no HTTP, no OpenAI."""

from .checkpointing import module_dict_from_toml_str, module_dict_to_toml_str
from .containers import ModuleDict, ModuleList
from .hooks import RemovableHandle, register_module_call_interceptor
from .module import IncompatibleKeys, Module
from .parameters import Parameter
from .session import Session, current_session

__all__ = [
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
