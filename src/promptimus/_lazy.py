"""The one lazy-export mechanism behind the package's ``__init__`` files (module ``__getattr__``).

Heavy names (anything importing ``openai``, ``httpx``, ``numpy``...) are listed with the submodule
that defines them and imported on first attribute access, so ``import promptimus`` stays fast.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

_ROOT = __name__.partition(".")[0] + "."


def lazy_exports(
    package: str,
    names: Mapping[str, str],
    namespace: MutableMapping[str, Any],
    submodules: Iterable[str] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for ``package``.

    ``names`` maps an exported name to the submodule of ``package`` that defines it (or to an
    absolute ``promptimus.…`` module path, for names re-exported from a sibling package);
    ``submodules`` are names that resolve to ``package.<name>`` itself. A resolved name is cached
    in ``namespace`` (the package's ``globals()``), so each is looked up once.
    """
    subpackages = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        if name in subpackages:
            return importlib.import_module(f"{package}.{name}")
        target = names.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        where = target if target.startswith(_ROOT) else f"{package}.{target}"
        value = getattr(importlib.import_module(where), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *names, *subpackages})

    return __getattr__, __dir__


def moved_modules(package: str, moved: Mapping[str, str]) -> None:
    """Keep ``package.<name>`` importable for modules that moved to another package.

    ``moved`` maps a submodule name to the absolute ``promptimus.…`` path it moved to. The moved
    module is imported now and registered under its old name too, so ``import package.name``
    and ``from package.name import X`` give the very same module object (one set of globals,
    one class per name) without a file at the old path.
    """
    for name, target in moved.items():
        sys.modules.setdefault(f"{package}.{name}", importlib.import_module(target))
