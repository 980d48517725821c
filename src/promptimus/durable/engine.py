"""The DBOS engine as durable runs use it: imported on first use, and the two facts about it the
package checks (is there a DBOS instance, is it launched).

DBOS keeps its instance and its registry of workflows in module globals and offers no public
question for "launched yet?"; the answers are read from there, in this one file.
"""

from __future__ import annotations

from typing import Any

from ..errors import DurableSetupError, OptionalDependencyMissing

__all__ = ["dbos", "is_launched", "registered", "require_launched"]


def dbos() -> Any:
    """The `dbos` package (`pip install 'promptimus[dbos]'`)."""
    try:
        import dbos as package
    except ImportError:
        raise OptionalDependencyMissing(
            "Durable runs need DBOS: pip install 'promptimus[dbos]'."
        ) from None
    return package


def _instance() -> Any:
    from dbos import _dbos

    return getattr(_dbos, "_dbos_global_instance", None)


def is_launched() -> bool:
    """Whether `DBOS.launch()` has run for the current DBOS instance."""
    return bool(getattr(_instance(), "_launched", False))


def require_launched(what: str) -> None:
    """Raise `DurableSetupError` unless DBOS is configured and launched."""
    if _instance() is None:
        raise DurableSetupError(
            f"{what} needs DBOS: call DBOS(config={{'name': ..., 'system_database_url': ...}}), "
            "create the DurableAgent, then DBOS.launch()."
        )
    if not is_launched():
        raise DurableSetupError(f"{what} needs a launched DBOS: call DBOS.launch() first.")


def registered(name: str) -> bool:
    """Whether a workflow called `name` is registered with DBOS in this process."""
    from dbos import _dbos

    registry = getattr(_dbos, "_dbos_global_registry", None)
    return registry is not None and name in getattr(registry, "workflow_info_map", {})
