"""promptimus 0.1's `promptimus.modules.tool`. Tools now live in `promptimus.tools` and agents
in `promptimus.agents`; each name imported from here warns once with its new home
(`promptimus.compat.names`)."""

from __future__ import annotations

from promptimus._compat_seam import compat_names

__getattr__ = compat_names(__name__)
