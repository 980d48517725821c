"""`Module`: the base class of every component. It owns registration, traversal, providers, the
call path (hooks), state dicts and checkpoints — one class, like `torch.nn.Module`."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import functools
import hashlib
import importlib
import inspect
import os
import sys
import weakref
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Self, overload

from .._compat_seam import CompatMethod, compat_names
from ..checkpoint import (
    DEFAULT_MAX_EXPANDED_CHARS,
    DEFAULT_MAX_FILE_BYTES,
    MAX_MODULE_DEPTH,
    checkpoint_text,
    plan_load,
    read_checkpoint,
    save_checkpoint,
)
from ..errors import (
    EmbedderNotSet,
    LLMNotSet,
    ModuleError,
    ModuleTooDeep,
    NotAModel,
    ProviderNotSet,
    RecursiveModule,
    RerankerNotSet,
    SyncCallInLoop,
    VectorStoreNotSet,
)
from . import hooks
from .hooks import (
    RemovableHandle,
    active_interceptors,
    close_call_input,
    maybe_await,
    open_call_input,
)
from .parameters import UNSET, Parameter, copy_value, owner_path
from .session import pending_turn, run_in_turn

if TYPE_CHECKING:
    from ..protocols import EmbedderProtocol, LLMProtocol, RerankerProtocol, VectorStoreProtocol

# The module whose forward is running in this context: lets `super().forward()` skip a second pass
# through the hooks while a module calling *itself* still gets one.
_active_module: contextvars.ContextVar[Module | None] = contextvars.ContextVar(
    "promptimus_active_module", default=None
)

_PROVIDER_ERRORS: dict[str, type[ProviderNotSet]] = {
    "llm": LLMNotSet,
    "embedder": EmbedderNotSet,
    "vector_store": VectorStoreNotSet,
    "reranker": RerankerNotSet,
}


class IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


def _wrap_forward(fn: Callable[..., Any], *, is_forward: bool = True) -> Callable[..., Any]:
    """`fn` run as a call of its module: the auto-tracing probe, the active module, the hooks
    and interceptors. `is_forward=False` for a body that is not the class's `forward` (an agent's
    run), which always gets the full call."""

    @functools.wraps(fn)
    async def forward(self: Module, *args: Any, **kwargs: Any) -> Any:
        if is_forward and _active_module.get() is self and type(self).forward is not forward:
            return await fn(self, *args, **kwargs)  # a super().forward() call inside our own call
        if pending_turn() is not None:  # the outermost call in a stored session: one turn
            return await run_in_turn(forward, self, *args, **kwargs)
        if hooks.auto_probe is not None and "opentelemetry.trace" in sys.modules:
            hooks.step_auto_probe()
        token = _active_module.set(self)
        try:
            if self._forward_pre_hooks or self._forward_hooks or active_interceptors():
                return await self._call_hooked(fn, args, kwargs)
            # the common case here, not in a helper: one coroutine frame less on every await
            return await fn(self, *args, **kwargs)
        finally:
            _active_module.reset(token)

    forward.__promptimus_wrapped__ = True  # type: ignore[attr-defined]
    return forward


def wrap_as_call(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn(module, ...)` made a call of its module (hooks, tracing) as `forward` is: for a body
    run instead of `forward` on a hot path, wrapped once rather than per call (`Module._call`)."""
    return _wrap_forward(fn, is_forward=False)


def _class_attribute(cls: type, name: str) -> Any:
    """What `cls` defines for `name` along its MRO (never the metaclass, so `mro` is free)."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


_PROVIDERS = __name__.partition(".")[0] + ".llms"  # the tier that turns a model string into a model


def _resolve_model(spec: str) -> LLMProtocol:
    """`promptimus.llms.resolve(spec)`. The core sits below the providers, so it names the
    resolver and imports it at the first model string, as the package's lazy exports do."""
    resolve = getattr(importlib.import_module(_PROVIDERS), "resolve")  # noqa: B009
    model: LLMProtocol = resolve(spec)
    return model


class Module(ABC):
    """Base class for all promptimus components.

    Assigning a `Parameter` or a `Module` to a public attribute registers it under that name, in
    assignment order; reassigning replaces it, `del` unregisters it. Names starting with `_` are
    plain attributes. A module may be shared by several parents (a diamond), never by itself or
    one of its descendants (a cycle raises `RecursiveModule`).

    `module.path` and `parameter.path` are absolute from `"root"` (`"root.agent.prompt"`) and name
    modules and parameters in errors, while `state_dict()`, `named_parameters()` and
    `named_modules()` use PyTorch's keys, relative to the module they are called on
    (`"agent.prompt"`, the module itself `""`).
    """

    _parameters: dict[str, Parameter[Any]]
    _submodules: dict[str, Module]
    _owners: list[tuple[weakref.ref[Module], str]]
    _providers: dict[str, Any]
    _forward_pre_hooks: dict[int, Callable[..., Any]]
    _forward_hooks: dict[int, Callable[..., Any]]

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_submodules", {})
        object.__setattr__(self, "_owners", [])
        object.__setattr__(self, "_providers", {})
        object.__setattr__(self, "_forward_pre_hooks", {})
        object.__setattr__(self, "_forward_hooks", {})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fn = cls.__dict__.get("forward")
        if fn is None or getattr(fn, "__promptimus_wrapped__", False):
            return
        if getattr(fn, "__isabstractmethod__", False):
            return
        if not inspect.iscoroutinefunction(fn):
            raise ModuleError(
                f"{cls.__name__}.forward must be defined with `async def`; promptimus modules are "
                "awaited (`await module(...)`). Use `module.run_sync(...)` from synchronous code."
            )
        cls.forward = _wrap_forward(fn)  # type: ignore[method-assign]

    # ------------------------------------------------------------------ registration

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        registry = self.__dict__.get("_parameters")
        if registry is None:
            raise ModuleError(
                f"{type(self).__name__}: call `super().__init__()` at the start of __init__ "
                f"before assigning {name!r}."
            )
        class_attr = _class_attribute(type(self), name)
        if isinstance(class_attr, property) and class_attr.fset is None:
            hint = f" Set a provider with `.with_{name}(...)`." if name in _PROVIDER_ERRORS else ""
            raise ModuleError(
                f"Cannot assign {name!r} on {self._where()}: it is a read-only property of "
                f"the class. Choose another attribute name.{hint}"
            )
        if hasattr(class_attr, "__set__"):  # a property or other data descriptor owns this name
            object.__setattr__(self, name, value)
            return
        if isinstance(value, Parameter | Module):
            if callable(class_attr) or isinstance(class_attr, staticmethod | classmethod):
                raise ModuleError(
                    f"Cannot register {name!r} on {self._where()}: that name is a method of "
                    "the class. Choose another attribute name."
                )
            self._register(name, value)
            object.__setattr__(self, name, value)
            return
        if name in registry or name in self._submodules:
            kind = "Parameter" if name in registry else "submodule"
            hint = f"set `{name}.value = ...`" if kind == "Parameter" else "assign a Module"
            raise ModuleError(
                f"{self._where()}: {name!r} is a registered {kind}; to change it {hint}, or "
                f"`del module.{name}` first if you mean to replace it with a plain attribute."
            )
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters or name in self._submodules:
            self._unregister(name)
        object.__delattr__(self, name)

    def _register(self, name: str, value: Parameter[Any] | Module) -> None:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ModuleError(
                f"Cannot register {name!r} on {self._where()}: the name has an unpaired "
                "surrogate, which a UTF-8 checkpoint cannot hold; use another name."
            ) from None
        if isinstance(value, Module):
            if "_owners" not in value.__dict__:
                raise ModuleError(
                    f"Cannot register {name!r} on {self._where()}: the {type(value).__name__} "
                    "was never initialised; call `super().__init__()` at the start of its __init__."
                )
            self._check_no_cycle(name, value)
            self._check_depth(name, value)
        if name in self._parameters or name in self._submodules:
            old = self._member(name)
            if old is value:
                return
            if isinstance(value, Parameter) == isinstance(old, Parameter):
                # the dict assignment below keeps the name's position: replacing is not re-ordering
                self._detach_member(name)
            else:
                self._unregister(name)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        else:
            self._submodules[name] = value
        value._attach(self, name)

    def _member(self, name: str) -> Parameter[Any] | Module | None:
        param = self._parameters.get(name)
        return param if param is not None else self._submodules.get(name)

    def _members(self) -> Iterator[tuple[str, Parameter[Any] | Module]]:
        yield from self._parameters.items()
        yield from self._submodules.items()

    def _detach_member(self, name: str) -> None:
        member = self._member(name)
        if member is not None:
            member._detach(self, name)

    def _unregister(self, name: str) -> None:
        self._detach_member(name)
        self._parameters.pop(name, None)
        self._submodules.pop(name, None)

    def _check_no_cycle(self, name: str, child: Module) -> None:
        if child is self:
            raise RecursiveModule(f"Cannot register {self._where()} as its own submodule {name!r}.")
        seen: set[int] = set()
        todo: deque[Module] = deque([self])
        while todo:
            node = todo.popleft()
            for owner in node._live_owners():
                if owner is child:
                    raise RecursiveModule(
                        f"Cannot register {child._where()} as {name!r} under {self._where()}: it "
                        "already contains that module, so the tree would loop. A module may be "
                        "shared by several parents, but never placed inside itself."
                    )
                if id(owner) not in seen:
                    seen.add(id(owner))
                    todo.append(owner)

    def _check_depth(self, name: str, child: Module) -> None:
        depth = _levels(self, Module._live_owners) + 1 + _levels(child, Module.children)
        if depth > MAX_MODULE_DEPTH:
            raise ModuleTooDeep(
                f"Cannot register {child._where()} as {name!r} under {self._where()}: the tree "
                f"would be {depth} modules deep, more than the limit of {MAX_MODULE_DEPTH} "
                "(promptimus.core.MAX_MODULE_DEPTH) that keeps saving, loading, repr and copies "
                "of a tree within Python's recursion limit. Flatten the tree (a ModuleList holds "
                "any number of modules side by side)."
            )

    def _attach(self, owner: Module, name: str) -> None:
        # setdefault: unpickling may attach a parent to a child whose state is still to come
        self.__dict__.setdefault("_owners", []).append((weakref.ref(owner), name))

    def _detach(self, owner: Module, name: str) -> None:
        self._owners[:] = [(r, n) for r, n in self._owners if not (r() is owner and n == name)]

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """Copy the subtree. Parent links are weak references, which `deepcopy` would share with
        the original (the clone's children would still answer to the original parents: their
        paths, providers and cycle checks); they are rebuilt inside the clone instead. The clone
        is a root, and it shares the original's providers (clients are not copied) and hooks."""
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            if key == "_owners":
                value = []
            elif key in ("_providers", "_forward_pre_hooks", "_forward_hooks"):
                value = dict(value)
            else:
                value = copy.deepcopy(value, memo)
            object.__setattr__(clone, key, value)
        for name, member in clone._members():
            member._attach(clone, name)
        return clone

    def __copy__(self) -> Self:
        # what `copy.copy` did before `__getstate__` existed: a shallow copy sharing everything
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__)
        return clone

    def __getstate__(self) -> dict[str, Any]:
        """Pickling (multiprocessing, caches, `torch.save`-like habits) keeps the tree, its values
        and hooks, but not the providers: clients hold connections and keys, which must not
        travel in a pickle. Set them again on the unpickled tree (`with_llm(...)`). For files
        meant to last or be read by people, save a checkpoint (`save()`) instead."""
        state = dict(self.__dict__)
        state["_owners"] = []  # weak references; each parent re-attaches in its __setstate__
        state["_providers"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        owners = self.__dict__.get("_owners", [])  # a parent may have attached already
        for key, value in state.items():
            object.__setattr__(self, key, value)
        object.__setattr__(self, "_owners", owners)
        for name, member in self._members():
            member._attach(self, name)

    def _live_owners(self) -> Iterator[Module]:
        for ref, _ in self._owners:
            owner = ref()
            if owner is not None:
                yield owner

    # ------------------------------------------------------------------ paths and traversal

    @property
    def path(self) -> str:
        """Absolute dotted path, as the original promptimus defines it: `"root"` for a module
        with no parent, `"root.agent.predictor"` below it. A module shared by several parents
        answers to the parent it was registered under last (the original's rule)."""
        return owner_path(self._owners)

    def _where(self) -> str:
        return f"{self.path!r} ({type(self).__name__})"

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Direct submodules; a child registered under two names is yielded once (as PyTorch)."""
        seen: set[int] = set()
        for name, child in self._submodules.items():
            if id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, child in self.named_children():
            yield child

    def named_modules(
        self, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """Every module in the tree, depth first, the root first under `prefix`."""
        seen: set[int] = set()

        def walk(module: Module, path: str) -> Iterator[tuple[str, Module]]:
            if remove_duplicate:
                if id(module) in seen:
                    return
                seen.add(id(module))
            yield path, module
            for name, child in module._submodules.items():
                yield from walk(child, f"{path}.{name}" if path else name)

        yield from walk(self, prefix)

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter[Any]]]:
        seen: set[int] = set()
        modules = (
            self.named_modules(prefix, remove_duplicate=remove_duplicate)
            if recurse
            else iter([(prefix, self)])
        )
        for path, module in modules:
            for name, param in module._parameters.items():
                if remove_duplicate:
                    if id(param) in seen:
                        continue
                    seen.add(id(param))
                yield (f"{path}.{name}" if path else name), param

    def parameters(self, recurse: bool = True) -> Iterator[Parameter[Any]]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        """Mark every parameter in the tree trainable (or frozen, with False)."""
        for param in self.parameters():
            param.frozen = not requires_grad
        return self

    # ------------------------------------------------------------------ providers

    def own_providers(self) -> dict[str, Any]:
        """The providers set on this module itself with `with_*`, by kind ("llm", "embedder",
        "vector_store", "reranker"); not the ones it would find on an ancestor."""
        return dict(self._providers)

    def _set_provider(self, kind: str, provider: Any) -> Self:
        self._providers[kind] = provider
        return self

    @overload
    def _resolve_provider(self, kind: Literal["llm"]) -> LLMProtocol: ...
    @overload
    def _resolve_provider(self, kind: Literal["embedder"]) -> EmbedderProtocol: ...
    @overload
    def _resolve_provider(self, kind: Literal["vector_store"]) -> VectorStoreProtocol: ...
    @overload
    def _resolve_provider(self, kind: Literal["reranker"]) -> RerankerProtocol: ...
    @overload
    def _resolve_provider(self, kind: str) -> object: ...

    def _resolve_provider(self, kind: str) -> Any:
        todo: deque[Module] = deque([self])
        seen: set[int] = set()
        while todo:
            node = todo.popleft()
            provider = node._providers.get(kind)
            if provider is not None:
                return provider
            for owner in node._live_owners():
                if id(owner) not in seen:
                    seen.add(id(owner))
                    todo.append(owner)
        label = {"llm": "an LLM", "embedder": "an embedder", "reranker": "a reranker"}.get(
            kind, "a vector store"
        )
        raise _PROVIDER_ERRORS[kind](
            f"{self._where()} needs {label} but neither it nor any parent has one; call "
            f"`.with_{kind}(...)` on it or on an ancestor."
        )

    def with_llm(self, llm: LLMProtocol | str) -> Self:
        """Set this module's LLM (its children use it unless they have their own): a model
        (anything with `achat`), or a model string such as ``"openai:gpt-4o-mini"``, resolved
        here as `promptimus.llms.resolve` does. Anything else is refused at once (`NotAModel`)."""
        if isinstance(llm, str):
            llm = _resolve_model(llm)
        elif not callable(getattr(llm, "achat", None)) or isinstance(llm, type):
            kind = f"the class {llm.__name__}" if isinstance(llm, type) else type(llm).__name__
            raise NotAModel(
                f"with_llm() takes a model (an object with `async achat(history)`, such as "
                f"OpenAILike(...)) or a model string like 'openai:gpt-4o-mini'; got {kind}."
                + (" Make an instance of it first." if isinstance(llm, type) else "")
            )
        return self._set_provider("llm", llm)

    with_provider = CompatMethod("core:with_provider")

    def with_embedder(self, embedder: EmbedderProtocol) -> Self:
        return self._set_provider("embedder", embedder)

    def with_vector_store(self, vector_store: VectorStoreProtocol) -> Self:
        return self._set_provider("vector_store", vector_store)

    def with_reranker(self, reranker: RerankerProtocol) -> Self:
        return self._set_provider("reranker", reranker)

    @property
    def llm(self) -> LLMProtocol:
        return self._resolve_provider("llm")

    @property
    def embedder(self) -> EmbedderProtocol:
        return self._resolve_provider("embedder")

    @property
    def vector_store(self) -> VectorStoreProtocol:
        return self._resolve_provider("vector_store")

    @property
    def reranker(self) -> RerankerProtocol:
        return self._resolve_provider("reranker")

    def has_provider(self, kind: str) -> bool:
        try:
            self._resolve_provider(kind)
        except ProviderNotSet:
            return False
        return True

    # ------------------------------------------------------------------ calling

    @abstractmethod
    async def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation. Call it as `await module(...)` or `await module.forward(...)`."""

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return await self.forward(*args, **kwargs)

    async def _call(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """`fn(self, *args, **kwargs)` as a call of this module, as its wrapped `forward` is."""
        return await _wrap_forward(fn, is_forward=False)(self, *args, **kwargs)

    async def _call_hooked(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """`fn` through this module's hooks and the active interceptors (tracing, ...)."""

        async def innermost(a: tuple[Any, ...], kw: dict[str, Any]) -> Any:
            _active_module.set(self)
            for hook in list(self._forward_pre_hooks.values()):
                changed = await maybe_await(hook(self, a, kw))
                if changed is not None:
                    a, kw = changed
            output = await fn(self, *a, **kw)
            for hook in list(self._forward_hooks.values()):
                replaced = await maybe_await(hook(self, a, kw, output))
                if replaced is not None:
                    output = replaced
            return output

        call: Callable[[tuple[Any, ...], dict[str, Any]], Any] = innermost
        for interceptor in reversed(list(active_interceptors().values())):
            call = functools.partial(interceptor, self, call)
        token = open_call_input(self)
        try:
            return await call(args, kwargs)
        finally:
            close_call_input(token)

    def run_sync(self, *args: Any, **kwargs: Any) -> Any:
        """Run `forward` from synchronous code (scripts). Inside an event loop, `await` instead."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.forward(*args, **kwargs))
        raise SyncCallInLoop(
            f"run_sync() on {self._where()} was called inside a running event loop (Jupyter, "
            "an async function); use `await module(...)` there instead."
        )

    def register_forward_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """`hook(module, args, kwargs)` runs before forward; it may return `(args, kwargs)`."""
        return RemovableHandle(self._forward_pre_hooks, hook)

    def register_forward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """`hook(module, args, kwargs, output)` runs after forward; it may return a new output."""
        return RemovableHandle(self._forward_hooks, hook)

    # ------------------------------------------------------------------ state

    def state_dict(self) -> dict[str, Any]:
        """Flat `{"dotted.path": value}` of every set parameter (shared ones under every path)."""
        return {
            name: copy_value(param._value)
            for name, param in self.named_parameters(remove_duplicate=False)
            if param._value is not UNSET
        }

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Load a flat state dict; all or nothing. Returns the keys skipped when `strict=False`."""
        nested: dict[str, Any] = {"params": {}, "submodules": {}}
        for key, value in state.items():
            *parents, leaf = key.split(".")
            node = nested
            for part in parents:
                node = node["submodules"].setdefault(part, {"params": {}, "submodules": {}})
            node["params"][leaf] = value
        plan = plan_load(self, nested, strict=strict)
        plan.apply()
        return IncompatibleKeys(plan.missing, plan.unexpected)

    def serialize(self) -> dict[str, Any]:
        """The module dict: `{"params": {name: value}, "submodules": {name: module_dict}}`, in
        registration order (unset parameters are left out)."""
        return {
            "params": {
                name: copy_value(param._value)
                for name, param in self._parameters.items()
                if param._value is not UNSET
            },
            "submodules": {name: child.serialize() for name, child in self._submodules.items()},
        }

    def load_dict(self, checkpoint: Mapping[str, Any], strict: bool = True) -> Self:
        """Load a module dict (as `serialize()` returns); validated first, then all or nothing."""
        plan_load(self, checkpoint, strict=strict).apply()
        return self

    def describe(self) -> str:
        """The module's checkpoint as TOML text: what `save()` writes to a new file."""
        return checkpoint_text(self.serialize())

    def save(self, path: str | os.PathLike[str], *, keep_comments: bool = True) -> Self:
        """Write the checkpoint atomically: on any failure the previous file stays intact.

        Over an existing checkpoint, values are updated in place: the file's comments, blank
        lines and key order stay, new parameters are added, removed ones dropped. An existing
        file that is not TOML raises `CheckpointSyntaxError` and stays as it is; pass
        `keep_comments=False` to replace any existing file with a fresh checkpoint.
        """
        save_checkpoint(Path(path), self.serialize(), keep_comments)
        return self

    def load(
        self,
        path: str | os.PathLike[str],
        strict: bool = True,
        allow_paths: Iterable[str | os.PathLike[str]] = (),
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_expanded_chars: int = DEFAULT_MAX_EXPANDED_CHARS,
    ) -> Self:
        """Load a TOML checkpoint, resolving `${file:...}`/`${pkg:...}` references.

        `${file:}` references may only read inside the checkpoint's folder, or inside a folder in
        `allow_paths`. Only regular files are read (a FIFO or device is refused, never waited
        on), each at most `max_file_bytes`; a file referenced from several places is read once,
        and the checkpoint with every reference expanded may hold at most `max_expanded_chars`
        characters (`ReferenceTooLarge`), so nested references cannot multiply into gigabytes.
        """
        data = read_checkpoint(
            Path(path),
            allow_paths=allow_paths,
            max_file_bytes=max_file_bytes,
            max_expanded_chars=max_expanded_chars,
        )
        return self.load_dict(data, strict=strict)

    def digest(self) -> str:
        """A content hash of the tree: equal values give equal digests, however they were set."""
        h = hashlib.sha256()
        for name in sorted(self._parameters):
            h.update(f"p:{name}={self._parameters[name].digest};".encode())
        for name in sorted(self._submodules):
            h.update(f"m:{name}={self._submodules[name].digest()};".encode())
        return h.hexdigest()

    # ------------------------------------------------------------------ repr

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): {param!r}" for name, param in self._parameters.items()]
        for name, child in self._submodules.items():
            child_lines = repr(child).split("\n")
            lines.append(f"({name}): " + "\n  ".join(child_lines))
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        body = "".join(f"\n  {line}" for line in lines)
        head = f"{type(self).__name__}({extra}" if extra else f"{type(self).__name__}("
        return f"{head}{body}\n)"


def _levels(start: Module, step: Callable[[Module], Iterable[Module]]) -> int:
    """How many times `step` (parents, or children) can be taken from `start` in a row: the
    length of the longest chain, found level by level (no recursion; a level never has
    duplicates, so diamonds cost no more than trees). Stops counting past the depth limit."""
    level, frontier = 0, [start]
    while level <= MAX_MODULE_DEPTH:
        found = {id(node): node for current in frontier for node in step(current)}
        if not found:
            return level
        level += 1
        frontier = list(found.values())
    return level


__getattr__ = compat_names(__name__)
