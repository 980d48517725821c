"""The one line a `RayRunner` prints before it waits for Ray: starting Ray (or reaching a
cluster) takes seconds to tens of seconds, and a silent wait looks like a hang."""

from __future__ import annotations

import contextlib
import sys

__all__ = ["announce_ray_start", "ray_start_line"]


def ray_start_line(address: str | None) -> str:
    """What the runner is about to wait for, in one line."""
    if address is None:
        return (
            "promptimus: starting a local Ray for RayRunner (its first start can take 30 s or "
            "more); workers start after it"
        )
    return f"promptimus: connecting RayRunner to the Ray cluster at {address}"


def announce_ray_start(address: str | None) -> None:
    """Write `ray_start_line` to stderr; a closed or missing stderr only loses the line."""
    with contextlib.suppress(Exception):
        sys.stderr.write(ray_start_line(address) + "\n")
        sys.stderr.flush()
