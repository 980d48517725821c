"""The module a `run` or `chat` drives: the target, its checkpoint, its model."""

from __future__ import annotations

from ..core.module import Module
from ..llms.resolve import resolve
from .checkpoint_view import load_module_dict
from .offline_model import OfflineModel
from .target import load_target


def prepare(target: str, checkpoint: str | None, model: str | None) -> Module:
    module = load_target(target)
    if checkpoint is not None:
        module.load_dict(load_module_dict(checkpoint))
    if model is not None:
        module.with_llm(OfflineModel() if model == "fake" else resolve(model))
    return module
