"""Which module to change: the one whose calls went wrong in the failing examples' traces.

Each trainable parameter belongs to the module that holds it (``instr.prompt`` to
``root.instr``). Reading the failing rows' traces, the modules that own parameters are ranked:
1. those whose call raised (the deepest: an error rises through every caller);
2. else the one whose output was the wrong answer (the last call, below the root, to give
   what the run returned);
3. else those called at all in the failing runs (a branch not taken is not to blame).
With no trace (a runner that keeps none), every owner is in the running, as in turn before.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["blamed_modules", "owner_of"]


def owner_of(path: str, root: str = "root") -> str:
    """The absolute path of the module holding parameter `path` (relative to `root`)."""
    owner = path.rpartition(".")[0]
    return f"{root}.{owner}" if owner else root


def _deepest(paths: set[str]) -> list[str]:
    return [p for p in paths if not any(o.startswith(p + ".") for o in paths)]


def blamed_modules(rows: Sequence[Any], owners: Iterable[str], root: str = "root") -> list[str]:
    """The owners (absolute module paths, in the order given) most to blame for `rows`."""
    ordered = list(dict.fromkeys(owners))
    traces = [row.trace for row in rows if getattr(row, "trace", None) is not None]
    if not traces:
        return ordered
    raised: set[str] = set()
    answered: set[str] = set()
    called: set[str] = set()
    for trace in traces:
        finals = [call.output for call in trace.calls if call.path == root and not call.error]
        giver = None
        for call in trace.calls:
            if call.path not in ordered:
                continue
            called.add(call.path)
            if call.error:
                raised.add(call.path)
            elif finals and call.output == finals[-1] and (giver is None or call.path != root):
                giver = call.path  # the last call to give what the run returned gave it
        if giver is not None:
            answered.add(giver)
    for tier in (raised, answered, called):
        chosen = set(_deepest(tier))
        if chosen:
            return [owner for owner in ordered if owner in chosen]
    return ordered
