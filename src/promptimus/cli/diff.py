"""`promptimus diff A B`: added, removed and changed parameters; exit 0 when equal, 1 if not.

The comparison is `promptimus.board.parameter_diff.parameter_changes`, the one the board shows.
"""

from __future__ import annotations

from typing import TextIO

from ..board.parameter_diff import flat_parameters, one_line, parameter_changes
from .checkpoint_view import load_module_dict
from .style import Style


def diff(path_a: str, path_b: str, stdout: TextIO) -> int:
    a, b = flat_parameters(load_module_dict(path_a)), flat_parameters(load_module_dict(path_b))
    style = Style(stdout)
    out: list[str] = []
    for change in parameter_changes(a, b, path_a, path_b):
        key = change.key
        if change.kind == "removed":
            out.append(style(f"- removed {key} = {one_line(change.old)}", "red"))
        elif change.kind == "added":
            out.append(style(f"+ added   {key} = {one_line(change.new)}", "green"))
        elif change.lines:
            out.append(style(f"~ changed {key}", "yellow"))
            for line in change.lines:
                colour = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1], "")
                out.append("    " + (style(line, colour) if colour else line))
        else:
            old, new = one_line(change.old), one_line(change.new)
            out.append(style(f"~ changed {key}: {old} -> {new}", "yellow"))
    if not out:
        stdout.write(f"{path_a} and {path_b} hold the same parameters.\n")
        return 0
    stdout.write("\n".join(out) + "\n")
    return 1
