"""promptimus: build LLM agents the way PyTorch builds networks.

Submodules and heavy names load on first use, so `import promptimus` stays fast and pulls in
neither `openai` nor `chromadb`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import errors
from .core import (
    Module,
    ModuleDict,
    ModuleList,
    Parameter,
    Session,
    current_session,
    module_dict_from_toml_str,
    module_dict_to_toml_str,
)
from .errors import PromptimusError

__version__ = "0.1.0"

# name -> module that defines it (imported on first attribute access)
_LAZY: dict[str, str] = {
    "Message": "promptimus.dto",
    "MessageRole": "promptimus.dto",
    "ImageContent": "promptimus.dto",
    "ToolRequest": "promptimus.dto",
    "ToolFunction": "promptimus.dto",
    "Usage": "promptimus.dto",
    "MessageDelta": "promptimus.dto",
    "ToolCallDelta": "promptimus.dto",
}
_SUBMODULES = {
    "dto",
    "llms",
    "modules",
    "embedders",
    "vector_stores",
    "rerankers",
    "testing",
    "transport",
    "tracing",
    "ops",
}

if TYPE_CHECKING:
    from . import dto as dto
    from . import embedders as embedders
    from . import llms as llms
    from . import modules as modules
    from . import rerankers as rerankers
    from . import testing as testing
    from . import vector_stores as vector_stores
    from .dto import ImageContent as ImageContent
    from .dto import Message as Message
    from .dto import MessageDelta as MessageDelta
    from .dto import MessageRole as MessageRole
    from .dto import ToolCallDelta as ToolCallDelta
    from .dto import ToolFunction as ToolFunction
    from .dto import ToolRequest as ToolRequest
    from .dto import Usage as Usage


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"promptimus.{name}")
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'promptimus' has no attribute {name!r}")
    value = getattr(importlib.import_module(target), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBMODULES})


__all__ = [
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "PromptimusError",
    "Session",
    "current_session",
    "errors",
    "module_dict_from_toml_str",
    "module_dict_to_toml_str",
    *_LAZY,
]
