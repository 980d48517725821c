"""`PickledAsSettings`: objects that hold live connections or open files travel as the
arguments that built them.

A store or cache handed to a worker process (multiprocessing, an evaluation pool, Ray, a
durable-run worker) must not carry its parent's sockets or SQLite handles: its pickle is the one
positional argument (a path or a URL) and the keyword settings, and unpickling calls `__init__`
with them, so the copy opens connections of its own where it lands.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["PickledAsSettings"]


class PickledAsSettings:
    """Mixin: pickled as ``type(self)(<_positional>, **{<_settings>})``.

    ``_positional`` names the attribute that holds the first argument of ``__init__`` and
    ``_settings`` the attributes that hold its keyword arguments (each stored under the
    argument's name).
    """

    _positional: ClassVar[str]
    _settings: ClassVar[tuple[str, ...]]

    def __getstate__(self) -> dict[str, Any]:
        return {
            self._positional: getattr(self, self._positional),
            **{name: getattr(self, name) for name in self._settings},
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        settings = dict(state)
        first = settings.pop(self._positional)
        self.__init__(first, **settings)  # type: ignore[misc]
