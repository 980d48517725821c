"""`promptimus show CHECKPOINT`: the tree, its parameters (prompts as text) and the digest."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TextIO

from .checkpoint_view import dict_digest, load_module_dict
from .style import Style

FOLD_LINES = 12


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _lines(data: Mapping[str, Any], indent: str, full: bool, style: Style, out: list[str]) -> None:
    for name, value in data.get("params", {}).items():
        key = style(name, "cyan")
        if isinstance(value, str) and "\n" not in value and len(value) <= 80:
            out.append(f"{indent}{key} = {_scalar(value)}")
        elif isinstance(value, str):
            text = value.split("\n")
            shown = text if full or len(text) <= FOLD_LINES else text[:FOLD_LINES]
            out.append(f"{indent}{key}: {style(f'text, {len(text)} lines', 'dim')}")
            out.extend(f"{indent}  {style('│', 'dim')} {line}" for line in shown)
            if len(shown) < len(text):
                more = f"... {len(text) - len(shown)} more lines (--full shows all)"
                out.append(f"{indent}  {style(more, 'dim')}")
        else:
            out.append(f"{indent}{key} = {_scalar(value)}")
    for name, sub in data.get("submodules", {}).items():
        out.append(f"{indent}{style(name, 'bold')}")
        _lines(sub, indent + "  ", full, style, out)


def show(path: str, full: bool, stdout: TextIO) -> int:
    data = load_module_dict(path)
    style = Style(stdout)
    out = [f"{style(path, 'bold')}  digest {dict_digest(data)}", style("root", "bold")]
    _lines(data, "  ", full, style, out)
    stdout.write("\n".join(out) + "\n")
    return 0
