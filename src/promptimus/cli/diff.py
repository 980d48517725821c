"""`promptimus diff A B`: added, removed and changed parameters; exit 0 when equal, 1 if not."""

from __future__ import annotations

import difflib
import json
from typing import Any, TextIO

from ..core.parameters import value_digest
from .checkpoint_view import flat_parameters, load_module_dict
from .style import Style


def _one_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def diff(path_a: str, path_b: str, stdout: TextIO) -> int:
    a, b = flat_parameters(load_module_dict(path_a)), flat_parameters(load_module_dict(path_b))
    style = Style(stdout)
    out: list[str] = []
    for key in [k for k in a if k not in b]:
        out.append(style(f"- removed {key} = {_one_line(a[key])}", "red"))
    for key in [k for k in b if k not in a]:
        out.append(style(f"+ added   {key} = {_one_line(b[key])}", "green"))
    for key in [k for k in a if k in b and value_digest(a[k]) != value_digest(b[k])]:
        old, new = a[key], b[key]
        if isinstance(old, str) and isinstance(new, str):
            out.append(style(f"~ changed {key}", "yellow"))
            lines = difflib.unified_diff(
                old.split("\n"),
                new.split("\n"),
                f"{path_a}:{key}",
                f"{path_b}:{key}",
                lineterm="",
            )
            for line in lines:
                colour = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1], "")
                out.append("    " + (style(line, colour) if colour else line))
        else:
            out.append(style(f"~ changed {key}: {_one_line(old)} -> {_one_line(new)}", "yellow"))
    if not out:
        stdout.write(f"{path_a} and {path_b} hold the same parameters.\n")
        return 0
    stdout.write("\n".join(out) + "\n")
    return 1
