"""promptimus: build LLM agents the way PyTorch builds networks.

Submodules and heavy names load on first use, so `import promptimus` stays fast and pulls in
neither `openai` nor `chromadb`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import errors
from ._lazy import lazy_exports
from ._version import __version__ as __version__
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
from .core import hooks as _hooks
from .errors import PromptimusError

# name -> module that defines it (imported on first attribute access)
_LAZY: dict[str, str] = {
    "Message": "dto",
    "MessageRole": "dto",
    "ImageContent": "dto",
    "ToolRequest": "dto",
    "ToolFunction": "dto",
    "Usage": "dto",
    "MessageDelta": "dto",
    "ToolCallDelta": "dto",
    "History": "dto",
    "Prompt": "prompts.prompt",
    "track_usage": "promptimus.observe.usage",
    "budget": "promptimus.observe.budget",
    "BudgetExceeded": "errors",
}
_SUBMODULES = {
    "dto",
    "llms",
    "modules",
    "agents",
    "prompts",
    "tools",
    "embedders",
    "vector_stores",
    "rerankers",
    "testing",
    "transport",
    "tracing",
    "ops",
    "common",
    "evals",
    "sessions",
    "guardrails",
}

if TYPE_CHECKING:
    from . import dto as dto
    from . import embedders as embedders
    from . import llms as llms
    from . import modules as modules
    from . import rerankers as rerankers
    from . import testing as testing
    from . import vector_stores as vector_stores
    from .dto import History as History
    from .dto import ImageContent as ImageContent
    from .dto import Message as Message
    from .dto import MessageDelta as MessageDelta
    from .dto import MessageRole as MessageRole
    from .dto import ToolCallDelta as ToolCallDelta
    from .dto import ToolFunction as ToolFunction
    from .dto import ToolRequest as ToolRequest
    from .dto import Usage as Usage
    from .errors import BudgetExceeded as BudgetExceeded
    from .observe.budget import budget as budget
    from .observe.usage import track_usage as track_usage
    from .prompts.prompt import Prompt as Prompt


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals(), submodules=_SUBMODULES)


def _auto_tracing_probe() -> bool:
    from .tracing.auto import probe  # imported only once OpenTelemetry is

    _hooks.auto_probe = probe  # later module calls go straight to it
    return probe()


_hooks.auto_probe = _auto_tracing_probe


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
