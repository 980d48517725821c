"""How the tiers below `promptimus.compat` reach it: by name, on first use.

`promptimus.compat` holds every name, spelling and calling form of promptimus 0.1 (and of the
versions since) that code written for them still uses. It sits at the top of the tiers, so no
module below imports it: where an older form can enter a module below, that module says so in one
line with one of these seams, naming the compat function that serves it as
``"<compat module>:<name>"``. Compat is imported at the first call of a function that accepts
older forms, or when a package misses a name; ``import promptimus`` never loads it, and its
modules import nothing heavy.

- `compat_names(package)`: a module ``__getattr__``. Names the package no longer defines (renamed
  ones, and ones that moved up a tier) are answered by `promptimus.compat.names`.
- `compat_calls(translator)`: a decorator. Each call's ``(args, kwargs)`` first pass through the
  translator, which rewrites an older calling form into today's (warning if it is deprecated)
  and hands today's forms back untouched.
- `CompatMethod(target)` / `CompatProperty(target)`: a class attribute served by a compat
  function that takes the instance first (an older method or property name).
- `compat_function(target)`: a compat function called where an older protocol meets today's code.

Warnings raised by compat name the caller's line: a translator or property is called two frames
below it (``stacklevel=3``), a compat method directly (``stacklevel=2``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["CompatMethod", "CompatProperty", "compat_calls", "compat_function", "compat_names"]

F = TypeVar("F", bound=Callable[..., Any])

Translator = Callable[
    [Callable[..., Any], tuple[Any, ...], dict[str, Any]], tuple[tuple[Any, ...], dict[str, Any]]
]

_COMPAT = __name__.partition(".")[0] + ".compat"


def _load(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(f"{_COMPAT}.{module}"), name)


def compat_names(
    package: str, fallback: Callable[[str], Any] | None = None
) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package``: ``fallback`` first (e.g. a `lazy_exports` one), then
    the names compat serves for it; `AttributeError` for the rest."""

    def __getattr__(name: str) -> Any:
        if fallback is not None:
            try:
                return fallback(name)
            except AttributeError:
                pass
        if name.startswith("__"):  # `__path__`, `__wrapped__`...: probes, never an older name
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return _load("names:older_name")(package, name)

    return __getattr__


def compat_calls(translator: str) -> Callable[[F], F]:
    """Decorate a function (or method) whose older calling forms ``translator`` rewrites; the
    translator is called as ``translator(fn, args, kwargs)`` and returns ``(args, kwargs)``."""

    def decorate(fn: F) -> F:
        loaded: list[Translator] = []

        def translate() -> Translator:
            if not loaded:
                loaded.append(_load(translator))
            return loaded[0]

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def call_async(*args: Any, **kwargs: Any) -> Any:
                args, kwargs = (loaded[0] if loaded else translate())(fn, args, kwargs)
                return await fn(*args, **kwargs)

            return call_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = (loaded[0] if loaded else translate())(fn, args, kwargs)
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return decorate


def compat_function(target: str) -> Callable[..., Any]:
    """The compat function ``target``, imported at its first call."""

    @functools.cache
    def load() -> Callable[..., Any]:
        return _load(target)  # type: ignore[no-any-return]

    def call(*args: Any, **kwargs: Any) -> Any:
        return load()(*args, **kwargs)

    return call


class CompatMethod:
    """A method whose body is the compat function ``target`` (called with the instance first)."""

    __slots__ = ("target",)

    def __init__(self, target: str) -> None:
        self.target = target

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        function = _load(self.target)
        return function if instance is None else function.__get__(instance, owner)


class CompatProperty:
    """A read-only property computed by the compat function ``target`` from the instance."""

    __slots__ = ("target",)

    def __init__(self, target: str) -> None:
        self.target = target

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return _load(self.target)(instance)
