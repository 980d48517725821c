"""The module a `run` or `chat` drives: the target, its checkpoint, its model."""

from __future__ import annotations

from typing import Any

from ..core.module import Module
from ..errors import ModelResolutionError
from ..llms.resolve import resolve
from ..tools.base import Tool
from .checkpoint_view import load_module_dict
from .offline_model import OfflineModel
from .target import load_target


def _tool_schemas(module: Module) -> dict[str, dict[str, Any]]:
    """The parameter schemas of the tools in `module`'s tree, by tool name."""
    schemas: dict[str, dict[str, Any]] = {}
    for _, node in module.named_modules():
        if isinstance(node, Tool):
            function = node.to_openai()["function"]
            schemas.setdefault(function["name"], function.get("parameters", {}))
    return schemas


def prepare(
    target: str, checkpoint: str | None, model: str | None, partial: bool = False
) -> Module:
    module = load_target(target)
    if checkpoint is not None:
        module.load_dict(load_module_dict(checkpoint), strict=not partial)
    if model is not None:
        offline = model == "fake"
        module.with_llm(OfflineModel(_tool_schemas(module)) if offline else _resolved(model))
    return module


def _resolved(model: str) -> Any:
    try:
        return resolve(model)
    except ModelResolutionError as exc:  # on the command line, one more model is at hand
        raise ModelResolutionError(f"{exc} Or --model fake: the built-in offline model.") from None
