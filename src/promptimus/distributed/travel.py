"""What travels to the workers, and the checks it passes first, in the driver.

The module travels as it pickles today: `Module.__getstate__` leaves the providers behind (their
clients hold keys and connections), and `setup` attaches new ones on each worker. A module must
pass `pickle` itself, the rule multiprocessing and caches hold it to, so a lambda or an open file
in the tree is refused here, naming where it is, instead of being copied by value with whatever
it captured. Once it passes, the bytes are written with cloudpickle (Ray's), which also carries
classes and functions defined in a script or a notebook (`__main__`), where the workers could
not import them. Such a class travels by value with its `forward`, which `Module` wrapped in its
call path (hooks, tracing); the wrapper is not sent but made again on the worker around the
user's function, so it uses that process's own call path. The metric and `setup` are functions:
they travel by cloudpickle alone.
"""

from __future__ import annotations

import io
import pickle
import types
from collections.abc import Iterator
from typing import Any

from ..core import Module, Parameter
from ..core.module import _wrap_forward
from ..errors import ModuleNotPicklable, NotPicklable

__all__ = ["function_bytes", "module_bytes", "providers_left_behind"]

# the Module's own bookkeeping, which its __getstate__ handles; members are walked one by one
_INTERNAL = frozenset({"_parameters", "_submodules", "_owners", "_providers"})


def _dumps(value: Any) -> bytes:
    from ray import cloudpickle

    class Pickler(cloudpickle.Pickler):
        def reducer_override(self, obj: Any) -> Any:
            if isinstance(obj, types.FunctionType) and getattr(
                obj, "__promptimus_wrapped__", False
            ):
                return _wrap_forward, (obj.__wrapped__,)  # type: ignore[attr-defined]
            return super().reducer_override(obj)

    buffer = io.BytesIO()
    Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def _describe(value: Any) -> str:
    name = getattr(value, "__qualname__", None)
    kind = type(value).__name__
    return f"a {kind} {name}" if isinstance(name, str) and callable(value) else f"a {kind}"


def _refusal(value: Any) -> str | None:
    try:
        pickle.dumps(value)
    except Exception as exc:
        text = str(exc)
        return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return None


def _members(module: Module) -> Iterator[tuple[str, Any]]:
    for relative, node in module.named_modules():
        prefix = f"{relative}." if relative else ""
        for name, param in node._parameters.items():
            yield f"{prefix}{name}", param.value if param.is_set else None
        for name, value in vars(node).items():
            if name in _INTERNAL or isinstance(value, Module | Parameter):
                continue
            yield f"{prefix}{name}", value


def module_bytes(module: Module, what: str = "module") -> bytes:
    """`module` pickled for the workers, or `ModuleNotPicklable` naming the attribute (its path
    in the tree, relative like `state_dict()` keys) that pickle refuses."""
    problem = _refusal(module)
    if problem is not None:
        where, cause = "", problem
        for path, value in _members(module):
            refused = _refusal(value)
            if refused is not None:
                where, cause = f": the attribute {path!r} holds {_describe(value)}", refused
                break
        raise ModuleNotPicklable(
            f"The {what} ({type(module).__name__}) cannot travel to the workers{where}, which "
            f"pickle refuses ({cause}). Keep in the tree only what pickles (Parameters, "
            "submodules, plain data, functions defined at module level) and build clients, "
            "files and other live objects in `setup`, which runs on each worker."
        )
    try:
        return _dumps(module)
    except Exception as exc:  # pickle took it, so this is rare: say what cloudpickle said
        raise ModuleNotPicklable(
            f"The {what} ({type(module).__name__}) cannot travel to the workers: "
            f"{type(exc).__name__}: {exc}."
        ) from None


def function_bytes(fn: Any, what: str) -> bytes:
    """`fn` (the metric, `setup`) pickled for the workers, or `NotPicklable` naming it."""
    try:
        return _dumps(fn)
    except Exception as exc:
        raise NotPicklable(
            f"The {what} ({_describe(fn)}) cannot travel to the workers: "
            f"{type(exc).__name__}: {exc}. Let it capture only what pickles, and build clients "
            "and files inside it (it runs on each worker)."
        ) from None


def providers_left_behind(module: Module) -> list[str]:
    """`"llm of 'root.agent'"` for each provider the tree uses, set on it or inherited from a
    parent: none of them travels."""
    found = [
        (kind, f"{kind} of {node.path!r}")
        for _, node in module.named_modules()
        for kind, provider in node._providers.items()
        if provider is not None
    ]
    kinds = {kind for kind, _ in found}
    inherited = [
        f"{kind} of a parent of {module.path!r}"
        for kind in ("llm", "embedder", "vector_store", "reranker")
        if kind not in kinds and module.has_provider(kind)
    ]
    return [text for _, text in found] + inherited
